/**
 * AdminService: flags (and their history), dead letters, tenants and API keys, dispatch limits; tenant policies,
 * shards and the vault's re-sealing are handled in admin-policy.ts, admin-shards.ts and admin-vault.ts and composed
 * here. The auth interceptor lets only admin keys in.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { assertStreamName } from "../../bus/keys.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { listFlagHistory } from "../../flags/flag-history.js";
import { setFlag } from "../../flags/flag-changes.js";
import type { FlagRow, ScopeKind } from "../../flags/flag-types.js";
import { AdminService, FlagScopeKind } from "../../gen/switchyard/api/v1/admin_pb.js";
import { createApiKey, listApiKeys, revokeApiKey } from "../../tenancy/api-keys.js";
import { createTenantWithKey } from "../../tenancy/bootstrap.js";
import { listTenants, setTenantBudget } from "../../tenancy/tenants.js";
import { adminActor, adminCall } from "../auth.js";
import { apiKeyToProto, deadLetterToProto, tenantToProto } from "../convert/admin.js";
import { auditRowToProto } from "../convert/audit.js";
import { enumMapping, int64ToNumber, toTimestamp } from "../convert/values.js";
import { deadLetterView, findDeadLetterStreams, replayAllDeadLetters } from "../../bus/dead-letters.js";
import { isForeignStream, listForeignDeadLetters, refuseForeignReplay } from "../../foreign/dead-letters.js";
import type { ServiceDeps } from "./deps.js";
import { adminPolicyHandlers } from "./admin-policy.js";
import { adminShardHandlers } from "./admin-shards.js";
import { adminVaultHandlers } from "./admin-vault.js";
import { clearLimit, setLimit } from "../../fairness/limit-changes.js";
import type { DispatchLimitRow } from "../../core/limits.js";

const DEFAULT_DEAD_LETTER_LIMIT = 100;
const MAX_DEAD_LETTER_LIMIT = 10_000;

const scopeKinds = enumMapping<ScopeKind, FlagScopeKind>("flag scope kind", [
  ["global", FlagScopeKind.GLOBAL],
  ["tenant", FlagScopeKind.TENANT],
  ["role", FlagScopeKind.ROLE],
  ["team", FlagScopeKind.TEAM],
]);

function flagToProto(flag: FlagRow) {
  return {
    name: flag.name,
    scopeKind: scopeKinds.toProto(flag.scopeKind),
    scope: flag.scope,
    enabled: flag.enabled,
    updatedBy: flag.updatedBy,
    reason: flag.reason,
    updatedAt: toTimestamp(flag.updatedAt),
  };
}

function streamName(stream: string, path: string): string {
  try {
    assertStreamName(stream);
  } catch (error) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `${path}: ${(error as Error).message}`, { cause: error, details: { path } });
  }
  return stream;
}

function limitToProto(limit: DispatchLimitRow) {
  return {
    orgId: limit.orgId,
    destination: limit.destination,
    ...(limit.maxInFlight !== null ? { maxInFlight: limit.maxInFlight } : {}),
    ...(limit.ratePerSec !== null ? { ratePerSec: limit.ratePerSec } : {}),
    ...(limit.burst !== null ? { burst: limit.burst } : {}),
    ...(limit.weight !== null ? { weight: limit.weight } : {}),
    updatedBy: limit.updatedBy,
    reason: limit.reason,
    updatedAt: toTimestamp(limit.updatedAt),
  };
}

export function adminService(deps: ServiceDeps): ServiceImpl<typeof AdminService> {
  return {
    ...adminPolicyHandlers(deps),
    ...adminShardHandlers(deps),
    ...adminVaultHandlers(deps),

    async setDispatchLimit(req, ctx) {
      const admin = adminCall(ctx);
      const l = req.limit;
      if (!l) throw new SwitchyardError(ErrorCode.InvalidArgument, "limit: required", { details: { path: "limit" } });
      const row = await setLimit(
        deps.stores.limits,
        deps.pool,
        { orgId: l.orgId, destination: l.destination, maxInFlight: l.maxInFlight ?? null, ratePerSec: l.ratePerSec ?? null, burst: l.burst ?? null, weight: l.weight ?? null },
        { actor: adminActor(ctx), reason: req.reason },
      );
      deps.logger.info({ orgId: row.orgId, destination: row.destination, key: admin.keyPrefix }, "dispatch limit set through the admin API");
      return { limit: limitToProto(row), audit: auditRowToProto(row.audit) };
    },

    async clearDispatchLimit(req, ctx) {
      const admin = adminCall(ctx);
      const cleared = await clearLimit(deps.stores.limits, deps.pool, { orgId: req.orgId, destination: req.destination }, { actor: adminActor(ctx), reason: req.reason });
      deps.logger.info({ orgId: req.orgId, destination: req.destination, cleared, key: admin.keyPrefix }, "dispatch limit cleared through the admin API");
      return { cleared };
    },

    async listDispatchLimits(_req, ctx) {
      adminCall(ctx);
      return { limits: (await deps.stores.limits.list(deps.pool)).map(limitToProto) };
    },

    async setFlag(req, ctx) {
      const admin = adminCall(ctx);
      const flag = await setFlag(deps.stores.flags, deps.pool, {
        name: req.name,
        scopeKind: scopeKinds.fromProtoOptional(req.scopeKind) ?? "global",
        scope: req.scope,
        enabled: req.enabled,
        actor: adminActor(ctx),
        reason: req.reason,
      });
      deps.logger.info({ flag: flag.name, scopeKind: flag.scopeKind, scope: flag.scope, enabled: flag.enabled, key: admin.keyPrefix }, "flag set through the admin API");
      // The change is stored; a mirror that fails to update now heals at the next poll of any coordinator.
      await deps.flagsChanged?.().catch((error: unknown) => deps.logger.warn({ err: error }, "mirroring the flag change to Redis failed; the next poll writes it"));
      return { flag: flagToProto(flag), audit: auditRowToProto(flag.audit) };
    },

    async listFlags(_req, ctx) {
      adminCall(ctx);
      return { flags: (await deps.stores.flags.list(deps.pool)).map(flagToProto) };
    },

    async listFlagHistory(req, ctx) {
      adminCall(ctx);
      const changes = await listFlagHistory(deps.stores.flags, deps.pool, {
        name: req.name,
        ...(scopeKinds.fromProtoOptional(req.scopeKind) ? { scopeKind: scopeKinds.fromProtoOptional(req.scopeKind)! } : {}),
        scope: req.scope,
        limit: req.limit,
        beforeMs: int64ToNumber(req.beforeMs),
      });
      return { changes: changes.map((c) => ({ ...c, scopeKind: scopeKinds.toProto(c.scopeKind), atMs: BigInt(c.atMs), seq: BigInt(c.seq) })) };
    },

    async listDeadLetters(req, ctx) {
      adminCall(ctx);
      const limit = req.limit || DEFAULT_DEAD_LETTER_LIMIT;
      if (limit < 1 || limit > MAX_DEAD_LETTER_LIMIT) {
        throw new SwitchyardError(ErrorCode.InvalidArgument, `limit: must be from 1 to ${MAX_DEAD_LETTER_LIMIT}`, { details: { path: "limit" } });
      }
      const streams = req.stream !== "" ? [streamName(req.stream, "stream")] : await findDeadLetterStreams(deps.redis, deps.keyPrefix);
      const letters = [];
      for (const stream of streams) {
        for (const letter of await deps.bus.listDeadLetters(stream, limit)) letters.push(deadLetterToProto(deadLetterView(letter, deps.maxPayloadBytes)));
      }
      // Foreign hops not re-sent (FOREIGN_NOT_RETRIED) are recorded in Postgres; see src/foreign/dead-letters.ts.
      if (req.stream === "" || isForeignStream(req.stream)) {
        for (const letter of await listForeignDeadLetters(deps.stores.bridges, deps.pool, { ...(req.stream !== "" ? { stream: req.stream } : {}), limit })) letters.push(deadLetterToProto(letter));
      }
      return { deadLetters: letters };
    },

    async replayDeadLetters(req, ctx) {
      const admin = adminCall(ctx);
      const stream = streamName(req.stream, "stream");
      refuseForeignReplay(stream);
      if ((req.ids.length > 0) === req.all) {
        throw new SwitchyardError(ErrorCode.InvalidArgument, "ids: name the entries to replay, or set all (not both)", { details: { path: "ids" } });
      }
      const replayed = req.all ? await replayAllDeadLetters(deps.bus, stream) : await deps.bus.replayDeadLetters(stream, req.ids);
      deps.logger.info({ stream, replayed, key: admin.keyPrefix }, "dead letters replayed through the admin API");
      return { replayed };
    },

    async createTenant(req, ctx) {
      const admin = adminCall(ctx);
      const created = await createTenantWithKey(deps.stores, deps.pool, {
        orgId: req.orgId,
        name: req.name,
        dailyBudget: req.dailyBudget ?? null,
        ...(req.keyName !== "" ? { keyName: req.keyName } : {}),
      });
      deps.logger.info({ orgId: created.tenant.orgId, key: admin.keyPrefix }, "tenant created through the admin API");
      return { tenant: tenantToProto(created.tenant), apiKey: apiKeyToProto(created.apiKey.key), secret: created.apiKey.secret };
    },

    async listTenants(_req, ctx) {
      adminCall(ctx);
      return { tenants: (await listTenants(deps.stores.tenants, deps.pool)).map(tenantToProto) };
    },

    async setTenantBudget(req, ctx) {
      const admin = adminCall(ctx);
      const tenant = await setTenantBudget(deps.stores.tenants, deps.pool, req.orgId, req.dailyBudget ?? null);
      deps.logger.info({ orgId: tenant.orgId, dailyBudget: tenant.dailyBudget, key: admin.keyPrefix }, "tenant budget set through the admin API");
      return { tenant: tenantToProto(tenant) };
    },

    async createApiKey(req, ctx) {
      const admin = adminCall(ctx);
      if (req.admin && req.orgId !== "") {
        throw new SwitchyardError(ErrorCode.InvalidArgument, "org_id: an admin key belongs to no tenant; leave org_id empty", { details: { path: "org_id" } });
      }
      const created = await createApiKey(deps.stores.apiKeys, deps.pool, { kind: req.admin ? "admin" : "tenant", orgId: req.orgId || null, name: req.name });
      deps.logger.info({ keyId: created.key.id, kind: created.key.kind, orgId: created.key.orgId, key: admin.keyPrefix }, "API key created through the admin API");
      return { apiKey: apiKeyToProto(created.key), secret: created.secret };
    },

    async revokeApiKey(req, ctx) {
      const admin = adminCall(ctx);
      const key = await revokeApiKey(deps.stores.apiKeys, deps.pool, req.id);
      deps.logger.info({ keyId: key.id, key: admin.keyPrefix }, "API key revoked through the admin API");
      return { apiKey: apiKeyToProto(key) };
    },

    async listApiKeys(req, ctx) {
      adminCall(ctx);
      return { apiKeys: (await listApiKeys(deps.stores.apiKeys, deps.pool, req.orgId !== "" ? { orgId: req.orgId } : {})).map(apiKeyToProto) };
    },
  };
}
