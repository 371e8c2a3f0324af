/**
 * The storage port of the hash-chained audit log (issue 27 §2): appending rows under each tenant's head, listing a
 * chain, and the plain reads its verifier walks it with. The Postgres adapter is postgres-audit-store.ts; the
 * engine appends through `AuditLogStore` (store/engine/engine-store.ts), the same append.
 */
import type { AuditEntry, AuditRow } from "../../domain.js";
import type { ChainHead } from "../../governance/audit-hash.js";
import type { AuditHeadCache } from "../../governance/audit-heads.js";
import type { PoolClient, Queryable } from "../db.js";

export interface AppendAuditOptions {
  /**
   * Heads kept in memory (the coordinator's): a tenant found there is not locked and read first; its head moves
   * only if it still is the cached one, else the call throws STALE_HEAD (retryable) after dropping it. The cache is
   * not advanced here: the caller does that once its transaction committed.
   */
  heads?: AuditHeadCache;
}

export interface ListAuditOptions {
  taskId?: string;
  /** Only rows with seq greater than this (keyset paging). */
  afterSeq?: number;
  /** Only rows with seq smaller than this (keyset paging newest first). */
  beforeSeq?: number;
  /** Seq descending: the latest rows first. */
  newestFirst?: boolean;
  /** Default 100, at most 10 000. */
  limit?: number;
}

/** Where a tenant's chain stood, read in one statement (one snapshot). */
export interface ChainStart {
  /** The `audit_heads` row; undefined when the tenant has none. */
  head: ChainHead | undefined;
  /** The highest seq in `audit_log` (0 when there is no row). */
  maxSeq: number;
}

export interface AuditStore {
  /**
   * Appends `entries` (any mix of tenants; order kept per tenant) in the caller's transaction and returns the chained
   * rows in input order. Each tenant's head is locked (or, cached, moved conditionally) so the chain never forks.
   */
  append(tx: Pick<PoolClient, "query">, entries: readonly AuditEntry[], options?: AppendAuditOptions): Promise<AuditRow[]>;
  /** Rows of one tenant's chain in seq order (or newest first). */
  list(db: Queryable, orgId: string, options?: ListAuditOptions): Promise<AuditRow[]>;
  /** The tenant's head and highest seq. */
  chainStart(db: Queryable, orgId: string): Promise<ChainStart>;
  /** Up to `limit` rows with `afterSeq < seq <= untilSeq`, in seq order. */
  chainPage(db: Queryable, orgId: string, afterSeq: number, untilSeq: number, limit: number): Promise<AuditRow[]>;
  /** The tenant's head row, or undefined when it has none. */
  head(db: Queryable, orgId: string): Promise<ChainHead | undefined>;
}
