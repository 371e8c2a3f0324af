/**
 * AdminService messages → the records the operator commands have always printed (TenantRecord, ApiKeyRecord,
 * DeadLetterView, DispatchLimitRow, FlagRow, MemberRow, LeaseRow): the inverse of the handler's gateway/convert/admin.ts
 * (and of gateway/services/admin-shards.ts for the shard rows), rebuilt field by field in the order the stores build
 * them, so `--json` output serialises byte for byte as before.
 *
 * Here rather than beside its inverse only because this change may not touch gateway/convert/; it belongs there.
 */
import { FlagScopeKind, type ApiKey, type CoordinatorMember, type DeadLetter, type DispatchLimit, type Flag, type ShardLease, type Tenant } from "../../gen/switchyard/api/v1/admin_pb.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { apiKeyKinds } from "../../gateway/convert/admin.js";
import { enumMapping, fromTimestamp, int64ToNumber, isoFromTimestamp } from "../../gateway/convert/values.js";
import type { DeadLetterView } from "../../bus/dead-letters.js";
import type { DispatchLimitRow } from "../../core/limits.js";
import type { FlagName, FlagRow, ScopeKind } from "../../flags/flag-types.js";
import type { LeaseRow, MemberRow } from "../../store/shards/shard-store.js";
import type { ApiKeyRecord } from "../../tenancy/api-keys.js";
import type { TenantRecord } from "../../tenancy/tenants.js";

// The same pairs as the handler's (gateway/services/admin.ts keeps its mapping private).
export const flagScopeKinds = enumMapping<ScopeKind, FlagScopeKind>("flag scope kind", [
  ["global", FlagScopeKind.GLOBAL],
  ["tenant", FlagScopeKind.TENANT],
  ["role", FlagScopeKind.ROLE],
  ["team", FlagScopeKind.TEAM],
]);

/** A timestamp the handler always sets; its absence is a broken server, not a null to print. */
function requiredDate(value: Parameters<typeof fromTimestamp>[0], what: string): Date {
  const date = fromTimestamp(value);
  if (!date) throw new SwitchyardError(ErrorCode.Internal, `the server sent no ${what}`);
  return date;
}

export function tenantFromProto(tenant: Tenant): TenantRecord {
  return { orgId: tenant.orgId, name: tenant.name, dailyBudget: tenant.dailyBudget ?? null, createdAt: requiredDate(tenant.createdAt, "tenant created_at") };
}

export function apiKeyFromProto(key: ApiKey): ApiKeyRecord {
  return {
    id: key.id,
    kind: apiKeyKinds.fromProto(key.kind),
    // An admin key belongs to no tenant: the message's "" is the record's null.
    orgId: key.orgId === "" ? null : key.orgId,
    name: key.name,
    prefix: key.prefix,
    createdAt: requiredDate(key.createdAt, "API key created_at"),
    revokedAt: fromTimestamp(key.revokedAt),
    lastUsedAt: fromTimestamp(key.lastUsedAt),
  };
}

export function deadLetterFromProto(letter: DeadLetter): DeadLetterView {
  const e = letter.envelope;
  return {
    stream: letter.stream,
    id: letter.id,
    originalId: letter.originalId,
    reason: letter.reason,
    deliveries: letter.deliveries,
    atMs: int64ToNumber(letter.atMs),
    bytes: letter.bytes,
    envelope: e ? { id: e.id, kind: e.kind, orgId: e.orgId, taskId: e.taskId, stepId: e.stepId } : null,
  };
}

export function limitFromProto(limit: DispatchLimit): DispatchLimitRow {
  return {
    orgId: limit.orgId,
    destination: limit.destination,
    maxInFlight: limit.maxInFlight ?? null,
    ratePerSec: limit.ratePerSec ?? null,
    burst: limit.burst ?? null,
    weight: limit.weight ?? null,
    updatedBy: limit.updatedBy,
    reason: limit.reason,
    updatedAt: isoFromTimestamp(limit.updatedAt) ?? "",
  };
}

export function flagRowFromProto(flag: Flag): FlagRow {
  return {
    name: flag.name as FlagName,
    scopeKind: flagScopeKinds.fromProto(flag.scopeKind),
    scope: flag.scope,
    enabled: flag.enabled,
    updatedBy: flag.updatedBy,
    reason: flag.reason,
    updatedAt: isoFromTimestamp(flag.updatedAt) ?? "",
  };
}

export function memberFromProto(member: CoordinatorMember): MemberRow {
  return {
    coordinatorId: member.coordinatorId,
    host: member.host,
    pid: member.pid,
    joinedAtMs: requiredDate(member.joinedAt, "member joined_at").getTime(),
    expiresAtMs: requiredDate(member.expiresAt, "member expires_at").getTime(),
  };
}

export function leaseFromProto(lease: ShardLease): LeaseRow {
  return { shard: lease.shard, owner: lease.owner ?? null, token: int64ToNumber(lease.token), expiresAtMs: requiredDate(lease.expiresAt, "lease expires_at").getTime(), live: lease.live };
}
