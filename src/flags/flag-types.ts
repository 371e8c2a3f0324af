/**
 * Live flags: the names, their scopes, a stored row, and the small switch interfaces the coordinator, the
 * harness and the engine read. Types only; `live-flags.ts` implements every switch, `flag-changes.ts` writes rows
 * (through the FlagStore port of src/store/flags/).
 *
 * Semantics: each flag is OFF unless turned on. A scoped value is in force only while the flag's global value is
 * on too (the global value is a master switch); `BUS_ROUTED` has no global value, only role/team scopes.
 */

export const FLAG_NAMES = ["BUS_ENABLED", "COORDINATOR_ENABLED", "HARNESS_ENABLED", "BUS_ROUTED", "A2A_EGRESS_ENABLED", "REPLY_ENABLED"] as const;
export type FlagName = (typeof FLAG_NAMES)[number];

export function isFlagName(value: unknown): value is FlagName {
  return typeof value === "string" && (FLAG_NAMES as readonly string[]).includes(value);
}

export const SCOPE_KINDS = ["global", "tenant", "role", "team"] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];

/** Which scopes each flag has. */
export const FLAG_SCOPES: Readonly<Record<FlagName, readonly ScopeKind[]>> = {
  BUS_ENABLED: ["global"],
  COORDINATOR_ENABLED: ["global", "tenant"],
  HARNESS_ENABLED: ["global", "role", "team"],
  BUS_ROUTED: ["role", "team"],
  A2A_EGRESS_ENABLED: ["global", "tenant"],
  REPLY_ENABLED: ["global", "tenant"],
};

/** What each flag switches, for listings and help. */
export const FLAG_DESCRIPTIONS: Readonly<Record<FlagName, string>> = {
  BUS_ENABLED: "coordinators and harnesses read and publish on the bus (off: outbox rows wait in Postgres)",
  COORDINATOR_ENABLED: "coordinators apply a tenant's inbox messages and due steps (off: held, never dropped)",
  HARNESS_ENABLED: "harnesses of a role/team take new work (off: in-flight turns finish, nothing new is read)",
  BUS_ROUTED: "ctx.delegate() from a role/team is routed over the bus (off: the turn fails BUS_NOT_ROUTED)",
  A2A_EGRESS_ENABLED: "foreign (A2A) hops may leave the perimeter (off: denied by builtin:egress-disabled)",
  REPLY_ENABLED: "workers and the tenant may post origin replies (off: refused as reply_disabled before any dial)",
};

/** One stored flag value (table `flags`); a missing row means the environment's default. */
export interface FlagRow {
  name: FlagName;
  scopeKind: ScopeKind;
  /** "" for global; the tenant id, or the role/team name. */
  scope: string;
  enabled: boolean;
  /** The actor of the last change. */
  updatedBy: string;
  reason: string;
  /** ISO 8601. */
  updatedAt: string;
}

/**
 * The tenants a coordinator serves, in a form a SQL filter can use: `only` these, or all `except` these.
 * "none" is `{ only: [] }`, "all" is `{ except: [] }`.
 */
export type TenantSelection = { only: readonly string[] } | { except: readonly string[] };

/** What a coordinator reads. Absent (no flags object) means everything is on. */
export interface CoordinatorFlags {
  busEnabled(): boolean;
  coordinatorEnabled(orgId: string): boolean;
  /** The same answer as `coordinatorEnabled` for every tenant at once, so the sweeper can filter in SQL. */
  coordinatorTenants?(): TenantSelection;
}

/** What a harness reads. Absent (no flags object) means everything is on. */
export interface HarnessFlags {
  busEnabled(): boolean;
  harnessEnabled(kind: "role" | "team", name: string): boolean;
  busRouted(kind: "role" | "team", name: string): boolean;
}

/** Every switch at once: what `LiveFlags` implements. */
export interface FlagSwitches extends CoordinatorFlags, HarnessFlags {
  egressEnabled(orgId: string): boolean;
  replyEnabled(orgId: string): boolean;
}

/** Everything on (egress included): for library users and tests that do not exercise flags. */
export const ALL_ON: FlagSwitches = {
  busEnabled: () => true,
  coordinatorEnabled: () => true,
  coordinatorTenants: () => ({ except: [] }),
  harnessEnabled: () => true,
  busRouted: () => true,
  egressEnabled: () => true,
  replyEnabled: () => true,
};

/**
 * A TenantSelection as two SQL array parameters for `tenantSqlClause`; `none` when nothing can match. No selection
 * means every tenant.
 */
export function tenantSqlFilter(selection: TenantSelection | undefined): { only: readonly string[] | null; except: readonly string[] | null; none: boolean } {
  const only = selection && "only" in selection ? selection.only : null;
  const except = selection && "except" in selection ? selection.except : null;
  return { only, except, none: only !== null && only.length === 0 };
}

/** The condition `tenantSqlFilter`'s two parameters, at `$n` (only) and `$n+1` (except), put on `column`. */
export function tenantSqlClause(column: string, n: number): string {
  return `($${n}::text[] IS NULL OR ${column} = ANY($${n}::text[])) AND ($${n + 1}::text[] IS NULL OR ${column} <> ALL($${n + 1}::text[]))`;
}

/** `global`, `tenant:acme`, `role:writer`: how a scope is written in logs, audit rows and listings. */
export function describeScope(scopeKind: ScopeKind, scope: string): string {
  return scopeKind === "global" ? "global" : `${scopeKind}:${scope}`;
}
