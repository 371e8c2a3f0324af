/**
 * The operator (SRE) operations the CLI performs — flags, dead letters, tenants, API keys, dispatch limits, tenant
 * policies, shards, re-sealing the vault — as one
 * client of the gateway's AdminService (admin-client.ts). Direct mode runs the AdminService handlers in-process
 * (direct-transport.ts, the operator acting as an admin for no tenant), so the handlers are the one implementation.
 * Every method returns the very record the commands printed when they called the stores themselves. A change (a
 * flag, a limit) is recorded as the operator's `--actor` in direct mode (sent in OPERATOR_ACTOR_HEADER, read by
 * gateway/auth.ts `adminActor`), and as the admin key (`apikey:NAME`) through a gateway.
 *
 * Always direct, even with `--url` / SWITCHYARD_URL set: these commands are how an operator makes the first tenant
 * and the first keys, and a `--url` set for tenant work carries a tenant key (test/gateway/remote-cli.test.ts,
 * "operator commands stay direct while --url is set"). The client takes any transport; remote mode is
 * `createApiTransport({ url, token })` once the CLI has a way to say an admin key is meant.
 *
 */
import type { DeadLetterView } from "../../bus/dead-letters.js";
import type { DispatchLimit, DispatchLimitRow } from "../../core/limits.js";
import type { AuditRow } from "../../domain.js";
import type { FlagRow, ScopeKind } from "../../flags/flag-types.js";
import type { FlagView } from "../../flags/flag-values.js";
import type { PolicyDocument } from "../../governance/policy.js";
import type { LeaseRow, MemberRow } from "../../store/shards/shard-store.js";
import type { ApiKeyRecord, NewApiKey } from "../../tenancy/api-keys.js";
import type { TenantRecord } from "../../tenancy/tenants.js";
import type { RewrapResult } from "../../vault/rewrap.js";
import type { InputFile } from "../args.js";
import type { CliContext } from "../context.js";

// The shapes the API answers in, named here so commands speak the client's vocabulary, not the modules behind it.
export type { ApiKeyRecord, AuditRow, DeadLetterView, DispatchLimit, DispatchLimitRow, FlagRow, FlagView, LeaseRow, MemberRow, NewApiKey, PolicyDocument, RewrapResult, ScopeKind, TenantRecord };
/** The flag names (help text of `flags set`); how a flag's scope is written (`global`, `role:writer`). */
export { describeScope, FLAG_NAMES } from "../../flags/flag-types.js";
/** The audit chain of changes that belong to no tenant (`_system`). */
export { SYSTEM_CHAIN } from "../../flags/flag-changes.js";
/** How a limit's scope is written (`tenant:acme/role:writer`). */
export { describeLimitScope } from "../../fairness/limit-changes.js";

/** A change as stored, with the audit row that records it (written in the same transaction). */
export type Audited<T> = T & { audit: AuditRow };

/** Who made a change and why (both recorded in the audit log). */
export interface ChangeBy {
  /** The operator's name for itself (`--actor`): recorded in direct mode; a gateway records the admin key instead. */
  actor: string;
  reason: string;
}

export interface AdminApi {
  /** Every flag value in force: this process's environment defaults with the stored rows (ListFlags) on top. */
  listFlagValues(): Promise<FlagView[]>;
  /** Stores a flag's value for one scope (`scope` "" for global). */
  setFlag(request: { name: string; scopeKind: ScopeKind; scope: string; enabled: boolean } & ChangeBy): Promise<Audited<FlagRow>>;
  /** `stream` undefined: every dead-letter stream, then the foreign hops not re-sent. At most `limit` per stream. */
  listDeadLetters(request: { stream?: string; limit: number }): Promise<DeadLetterView[]>;
  /** `ids`, or every entry of the stream (`all`); how many were put back. */
  replayDeadLetters(request: { stream: string; ids?: readonly string[]; all?: boolean }): Promise<number>;
  /** The tenant and its first key; the key's secret is in the answer once. */
  createTenant(request: { orgId: string; name: string; dailyBudget: number | null; keyName: string }): Promise<{ tenant: TenantRecord; apiKey: NewApiKey }>;
  listTenants(): Promise<TenantRecord[]>;
  /** `null` removes the budget. */
  setTenantBudget(orgId: string, dailyBudget: number | null): Promise<TenantRecord>;
  createApiKey(request: { kind: "admin"; name: string } | { kind: "tenant"; orgId: string; name: string }): Promise<NewApiKey>;
  revokeApiKey(id: string): Promise<ApiKeyRecord>;
  /** `orgId` undefined: every key, admin keys included. */
  listApiKeys(filter: { orgId?: string }): Promise<ApiKeyRecord[]>;
  listDispatchLimits(): Promise<DispatchLimitRow[]>;
  /** Replaces the limits of one scope; fields left null are not limited. */
  setDispatchLimit(limit: DispatchLimit, change: ChangeBy): Promise<Audited<DispatchLimitRow>>;
  /** Removes the limits of one scope; false when it had none. */
  clearDispatchLimit(scope: { orgId: string; destination: string }, change: ChangeBy): Promise<boolean>;
  /**
   * Validates the policy file and stores it as the tenant's next version. NOT_FOUND for an unknown tenant; an
   * invalid document is INVALID_POLICY reported against the file (`args.ts` inFile: its path, then the field path).
   */
  setTenantPolicy(orgId: string, file: InputFile): Promise<{ version: number }>;
  /** The policy that applies now: `version` null and `builtin` true for the built-in default. */
  getTenantPolicy(orgId: string): Promise<{ version: number | null; builtin: boolean; document: PolicyDocument }>;
  /** The shard count, the live coordinators and every lease; `tenantShard` when `orgId` is given. */
  listShards(filter: { orgId?: string }): Promise<ShardsView>;
  /** Re-seals with the current key, using the key ring of the process that serves the call (direct mode: this one). */
  rewrapSecrets(filter: { orgId?: string }): Promise<RewrapResult>;
}

/** Who owns which shard now (ListShards). */
export interface ShardsView {
  shardCount: number;
  members: MemberRow[];
  leases: LeaseRow[];
  /** The shard the asked-for tenant maps to; undefined when none was asked for. */
  tenantShard: number | undefined;
}

/** Runs a command's work against the AdminService, in-process (see above); always closes what it opened. */
export async function withAdminApi<T>(ctx: CliContext, fn: (api: AdminApi) => Promise<T>): Promise<T> {
  // Loaded here, not at the top: every command's registration imports this file.
  const [{ openDirectTransport }, { createClientAdminApi }] = await Promise.all([import("./direct-transport.js"), import("./admin-client.js")]);
  const direct = openDirectTransport(ctx, undefined);
  try {
    return await fn(createClientAdminApi(direct.transport, { mode: "direct", where: "the database (direct mode)", flagDefaults: ctx.config.flags }));
  } finally {
    await direct.close();
  }
}
