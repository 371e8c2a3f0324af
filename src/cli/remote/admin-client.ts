/**
 * AdminApi as a client of the AdminService over any transport (in-process in direct mode: admin-api.ts). Errors come
 * back as the SwitchyardError the handler raised (`switchyardErrorOf`), so the commands exit as they always did.
 */
import { createClient, type Transport } from "@connectrpc/connect";
import type { FlagsConfig } from "../../config/index.js";
import { FlagValues } from "../../flags/flag-values.js";
import { AdminService } from "../../gen/switchyard/api/v1/admin_pb.js";
import type { AdminApi } from "./admin-api.js";
import { apiKeyFromProto, deadLetterFromProto, flagRowFromProto, limitFromProto, tenantFromProto } from "./admin-convert.js";
import { callerAt } from "./remote-api.js";

export interface ClientAdminApiOptions {
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

  return {
    async listFlagValues() {
      const rows = (await call(() => admin.listFlags({}))).flags.map(flagRowFromProto);
      return new FlagValues(options.flagDefaults, rows).describe();
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
  };
}
