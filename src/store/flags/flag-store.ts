/**
 * The flags' storage port (issue 27 §2): table `flags`, each change written with its audit row in one transaction
 * (flags/flag-changes.ts decides what is written), the changes read back from the audit chains (flags/flag-history.ts),
 * and the tenants a coordinator's tenant hold looks at (flags/tenant-hold.ts). The Postgres adapter is
 * postgres-flag-store.ts beside this file.
 */
import type { AuditEntry, AuditRow } from "../../domain.js";
import type { FlagName, FlagRow, ScopeKind } from "../../flags/flag-types.js";
import type { Pool, PoolClient, Queryable } from "../db.js";

/** One flag value as written: checked, with who set it, why and when. */
export interface FlagWrite {
  name: FlagName;
  scopeKind: ScopeKind;
  scope: string;
  enabled: boolean;
  updatedBy: string;
  reason: string;
  nowMs: number;
}

/** Which flag changes to read; null matches any. */
export interface FlagHistoryQuery {
  name: string | null;
  /** The scope as the audit row writes it (`describeScope`). */
  destination: string | null;
  /** Only changes recorded before this time (ms since the epoch). */
  beforeMs: number | null;
  limit: number;
}

/** One flag change as its audit row records it. */
export interface FlagAuditRecord {
  /** The audit chain (a tenant, or `_system`) and the row's place in it. */
  chain: string;
  seq: number;
  /** The flag's name. */
  rule: string;
  /** The scope, as `describeScope` wrote it. */
  destination: string;
  /** `on` / `off`. */
  verdict: string;
  actor: string;
  reason: string;
  atMs: number;
}

export interface FlagStore {
  /**
   * Sets one flag value and appends `audit`, in one transaction: the caller's when `db` is a client (which must be
   * in one), a new one on a pool. Returns the stored row and its audit row.
   */
  set(db: Pool | PoolClient, flag: FlagWrite, audit: AuditEntry): Promise<FlagRow & { audit: AuditRow }>;
  /** Every stored value of a flag this release knows, by name then scope. */
  list(db: Queryable): Promise<FlagRow[]>;
  /** Flag changes, newest first, across every chain (an operator read: owner pool, no tenant scope). */
  history(db: Queryable, query: FlagHistoryQuery): Promise<FlagAuditRecord[]>;
  /**
   * The tenants with tasks running or parked (of the shards `shards` owns, when given): those whose inbox messages
   * an earlier process, or a shard's previous owner, may have held.
   */
  tenantsInFlight(db: Queryable, shards?: { count: number; owned: readonly number[] }): Promise<string[]>;
}
