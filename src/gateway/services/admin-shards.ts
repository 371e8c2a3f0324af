/**
 * AdminService.ListShards: which coordinator owns which tenant shard now (issue 11), read through the shard port
 * (ServiceDeps.stores.coordinator.shards) — the operator's `switchyard shards`.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { shardOf } from "../../bus/shards.js";
import { AdminService, type CoordinatorMemberSchema, type ShardLeaseSchema } from "../../gen/switchyard/api/v1/admin_pb.js";
import type { LeaseRow, MemberRow } from "../../store/shards/shard-store.js";
import { adminCall } from "../auth.js";
import { toTimestamp } from "../convert/values.js";
import type { ServiceDeps } from "./deps.js";

export type AdminShardHandlers = Pick<ServiceImpl<typeof AdminService>, "listShards">;

function memberToProto(member: MemberRow): MessageInitShape<typeof CoordinatorMemberSchema> {
  return { coordinatorId: member.coordinatorId, host: member.host, pid: member.pid, joinedAt: toTimestamp(member.joinedAtMs), expiresAt: toTimestamp(member.expiresAtMs) };
}

function leaseToProto(lease: LeaseRow): MessageInitShape<typeof ShardLeaseSchema> {
  return { shard: lease.shard, ...(lease.owner !== null ? { owner: lease.owner } : {}), token: BigInt(lease.token), expiresAt: toTimestamp(lease.expiresAtMs), live: lease.live };
}

export function adminShardHandlers(deps: ServiceDeps): AdminShardHandlers {
  return {
    async listShards(req, ctx) {
      adminCall(ctx);
      const shards = deps.stores.coordinator.shards;
      // Before any coordinator recorded a count, the one this process would use (and so would its coordinators).
      const count = (await shards.readShardCount(deps.pool)) ?? deps.shardCount;
      const members = await shards.listMembers(deps.pool);
      const leases = await shards.listLeases(deps.pool);
      return {
        shardCount: count,
        members: members.map(memberToProto),
        leases: leases.map(leaseToProto),
        ...(req.orgId !== undefined ? { tenantShard: shardOf(req.orgId, count) } : {}),
      };
    },
  };
}
