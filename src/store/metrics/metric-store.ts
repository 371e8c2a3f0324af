/**
 * The storage port of the scrape-time gauges (issue 27 §2): what metrics/collect.ts reads from Postgres when
 * Prometheus scrapes, one read per gauge (or pair of gauges). Reads only, as the owner: every tenant's rows count.
 * The Postgres adapter is postgres-metric-store.ts beside this file.
 */
import type { Queryable } from "../db.js";

/** One tenant's value of a per-tenant gauge. */
export interface TenantValue {
  tenant: string;
  value: number;
}

/** A live flag value as the gauge reports it. */
export interface FlagValue {
  name: string;
  scopeKind: string;
  scope: string;
  enabled: boolean;
}

/** The outbox rows not yet published. */
export interface OutboxBacklog {
  rows: number;
  /** Age of the oldest row in seconds, by the database's clock (0 when empty; may be slightly below 0). */
  oldestAgeSeconds: number;
}

export interface MetricStore {
  /** Pending approvals per tenant (tenants with none are absent). */
  approvalsPending(db: Queryable): Promise<TenantValue[]>;
  /** Cost accrued on `day` (`costDay`, UTC) per tenant, 0 for every tenant without any. */
  dailyCost(db: Queryable, day: string): Promise<TenantValue[]>;
  /** The daily budget of the tenants that have one. */
  dailyBudgets(db: Queryable): Promise<TenantValue[]>;
  /** Seq of each tenant's audit chain head. */
  auditHeadSeqs(db: Queryable): Promise<TenantValue[]>;
  /** Seq of each chain's newest signed checkpoint (0 when none). */
  auditCheckpointSeqs(db: Queryable): Promise<TenantValue[]>;
  /** Every stored flag value (also of flags this release does not know), by name then scope. */
  flags(db: Queryable): Promise<FlagValue[]>;
  outbox(db: Queryable): Promise<OutboxBacklog>;
}
