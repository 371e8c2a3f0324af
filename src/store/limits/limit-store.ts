/**
 * The dispatch limits' storage port (issue 27 §2): table `dispatch_limits`, written with its audit row in one
 * transaction (fairness/limit-changes.ts decides what is written) and polled by fairness/live-limits.ts. The
 * Postgres adapter is postgres-limit-store.ts beside this file.
 */
import type { AuditEntry, AuditRow } from "../../domain.js";
import type { DispatchLimit, DispatchLimitRow } from "../../core/limits.js";
import type { Pool, PoolClient, Queryable } from "../db.js";

/** One scope's limits as written: checked, with who set them, why and when. */
export interface LimitWrite extends DispatchLimit {
  updatedBy: string;
  reason: string;
  nowMs: number;
}

export interface LimitStore {
  /**
   * Sets (replaces) one scope's limits and appends `audit`, in one transaction: the caller's when `db` is a client
   * (which must be in one), a new one on a pool. Returns the stored row and its audit row.
   */
  set(db: Pool | PoolClient, limit: LimitWrite, audit: AuditEntry): Promise<DispatchLimitRow & { audit: AuditRow }>;
  /** Removes one scope's limits and then appends `audit`, in one transaction like `set`; false (and no audit) when it had none. */
  clear(db: Pool | PoolClient, scope: { orgId: string; destination: string }, audit: AuditEntry): Promise<boolean>;
  /** Every stored limit, by tenant then destination. */
  list(db: Queryable): Promise<DispatchLimitRow[]>;
}
