/**
 * AdminApi as a client of the AdminService over any transport (in-process in direct mode: admin-api.ts). Errors come
 * back as the SwitchyardError the handler raised (`switchyardErrorOf`), so the commands exit as they always did.
 */
import { createClient, type Transport } from "@connectrpc/connect";
import type { FlagsConfig } from "../../config/index.js";
import { validateLimit } from "../../core/limits.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { FlagValues } from "../../flags/flag-values.js";
import { AdminService } from "../../gen/switchyard/api/v1/admin_pb.js";
import { operatorActorHeader } from "../../gateway/auth.js";
import { auditRowFromProto } from "../../gateway/convert/audit.js";
import type { PolicyDocument } from "../../governance/policy.js";
import { inFile } from "../args.js";
import type { AdminApi } from "./admin-api.js";
import { apiKeyFromProto, deadLetterFromProto, flagRowFromProto, flagScopeKinds, leaseFromProto, limitFromProto, memberFromProto, tenantFromProto } from "./admin-convert.js";
import { callerAt } from "./remote-api.js";

export interface ClientAdminApiOptions {
  /** `direct`: the operator's `--actor` goes with each change (OPERATOR_ACTOR_HEADER); a gateway records the key. */
  mode: "direct" | "remote";
  /** Names the other side in errors that are about reaching it. */
  where: string;
  /**
   * The environment defaults `flags list` shows under the stored rows: this process's (SWITCHYARD_* flags), as
   * `flags list` always showed them; AdminService.ListFlags answers only the rows.
   */
  flagDefaults: FlagsConfig;
}

export function createClientAdminApi(transport: Transport, options: ClientAdminApiOptions): AdminApi {
  const admin = createClient(AdminService, transport);
  const call = callerAt(options.where);
  const by = (actor: string) => (options.mode === "direct" ? { headers: operatorActorHeader(actor) } : {});
  /** A part of an answer the handler always sets; its absence is a broken server. */
  const required = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new SwitchyardError(ErrorCode.Internal, `${options.where} answered without ${what}`);
    return value;
  };

  return {
    async listFlagValues() {
      const rows = (await call(() => admin.listFlags({}))).flags.map(flagRowFromProto);
      return new FlagValues(options.flagDefaults, rows).describe();
    },
    async setFlag(request) {
      const res = await call(() =>
        admin.setFlag({ name: request.name, scopeKind: flagScopeKinds.toProto(request.scopeKind), scope: request.scope, enabled: request.enabled, reason: request.reason }, by(request.actor)),
      );
      return { ...flagRowFromProto(required(res.flag, "the flag")), audit: auditRowFromProto(required(res.audit, "the audit row")) };
    },
    async listDeadLetters(request) {
      const res = await call(() => admin.listDeadLetters({ stream: request.stream ?? "", limit: request.limit }));
      return res.deadLetters.map(deadLetterFromProto);
    },
    async replayDeadLetters(request) {
      return (await call(() => admin.replayDeadLetters({ stream: request.stream, ids: [...(request.ids ?? [])], all: request.all ?? false }))).replayed;
    },
    async createTenant(request) {
      const res = await call(() =>
        admin.createTenant({ orgId: request.orgId, name: request.name, keyName: request.keyName, ...(request.dailyBudget !== null ? { dailyBudget: request.dailyBudget } : {}) }),
      );
      return { tenant: tenantFromProto(res.tenant!), apiKey: { secret: res.secret, key: apiKeyFromProto(res.apiKey!) } };
    },
    async listTenants() {
      return (await call(() => admin.listTenants({}))).tenants.map(tenantFromProto);
    },
    async setTenantBudget(orgId, dailyBudget) {
      return tenantFromProto((await call(() => admin.setTenantBudget({ orgId, ...(dailyBudget !== null ? { dailyBudget } : {}) }))).tenant!);
    },
    async createApiKey(request) {
      const res = await call(() => admin.createApiKey(request.kind === "admin" ? { admin: true, name: request.name } : { orgId: request.orgId, name: request.name }));
      return { secret: res.secret, key: apiKeyFromProto(res.apiKey!) };
    },
    async revokeApiKey(id) {
      return apiKeyFromProto((await call(() => admin.revokeApiKey({ id }))).apiKey!);
    },
    async listApiKeys(filter) {
      return (await call(() => admin.listApiKeys({ orgId: filter.orgId ?? "" }))).apiKeys.map(apiKeyFromProto);
    },
    async listDispatchLimits() {
      return (await call(() => admin.listDispatchLimits({}))).limits.map(limitFromProto);
    },
    async setDispatchLimit(limit, change) {
      // Checked here first, as the store checks it: a value the message cannot carry (`--max-in-flight 2.5` in an
      // int32) is refused with the store's words, not the encoder's. The handler checks it again.
      const l = validateLimit(limit);
      const res = await call(() =>
        admin.setDispatchLimit(
          {
            limit: {
              orgId: l.orgId,
              destination: l.destination,
              ...(l.maxInFlight !== null ? { maxInFlight: l.maxInFlight } : {}),
              ...(l.ratePerSec !== null ? { ratePerSec: l.ratePerSec } : {}),
              ...(l.burst !== null ? { burst: l.burst } : {}),
              ...(l.weight !== null ? { weight: l.weight } : {}),
            },
            reason: change.reason,
          },
          by(change.actor),
        ),
      );
      return { ...limitFromProto(required(res.limit, "the limit")), audit: auditRowFromProto(required(res.audit, "the audit row")) };
    },
    async clearDispatchLimit(scope, change) {
      return (await call(() => admin.clearDispatchLimit({ orgId: scope.orgId, destination: scope.destination, reason: change.reason }, by(change.actor)))).cleared;
    },
    async setTenantPolicy(orgId, file) {
      try {
        return { version: (await call(() => admin.setTenantPolicy({ orgId, source: file.text }))).version };
      } catch (error) {
        // Only the document's verdict is about the file; an unknown tenant or an unreachable store is not.
        throw error instanceof SwitchyardError && error.code === ErrorCode.InvalidPolicy ? inFile(file.path, error) : error;
      }
    },
    async getTenantPolicy(orgId) {
      const res = await call(() => admin.getTenantPolicy({ orgId }));
      // The handler sends the normalized document it compiled; it is not validated again here.
      return { version: res.version ?? null, builtin: res.builtin, document: required(res.document, "the policy document") as unknown as PolicyDocument };
    },
    async listShards(filter) {
      const res = await call(() => admin.listShards(filter.orgId !== undefined ? { orgId: filter.orgId } : {}));
      return { shardCount: res.shardCount, members: res.members.map(memberFromProto), leases: res.leases.map(leaseFromProto), tenantShard: res.tenantShard };
    },
    async rewrapSecrets(filter) {
      const res = await call(() => admin.rewrapSecrets({ orgId: filter.orgId ?? "" }));
      return { keyId: res.keyId, connections: res.connections, ingestSecrets: res.ingestSecrets };
    },
  };
}
