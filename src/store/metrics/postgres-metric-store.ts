/**
 * The Postgres adapter of the scrape-time gauges' port (metric-store.ts), one SQL operation per function.
 */
import type { Queryable } from "../db.js";
import type { FlagValue, MetricStore, OutboxBacklog, TenantValue } from "./metric-store.js";

export function createPostgresMetricStore(): MetricStore {
  return {
    approvalsPending: readApprovalsPending,
    dailyCost: readDailyCost,
    dailyBudgets: readDailyBudgets,
    auditHeadSeqs: readAuditHeadSeqs,
    auditCheckpointSeqs: readAuditCheckpointSeqs,
    flags: readFlagValues,
    outbox: readOutboxBacklog,
  };
}

async function tenantRows(db: Queryable, sql: string, params: unknown[] = []): Promise<TenantValue[]> {
  return (await db.query<{ tenant: string; value: number | string | null }>(sql, params)).rows.map((r) => ({ tenant: r.tenant, value: Number(r.value ?? 0) }));
}

export function readApprovalsPending(db: Queryable): Promise<TenantValue[]> {
  return tenantRows(db, "SELECT org_id AS tenant, count(*)::int AS value FROM approvals WHERE status = 'pending' GROUP BY org_id");
}

export function readDailyCost(db: Queryable, day: string): Promise<TenantValue[]> {
  return tenantRows(
    db,
    `SELECT org_id AS tenant, sum(cost) AS value FROM (
       SELECT org_id, cost FROM tenant_daily_cost WHERE day = $1::date
       UNION ALL SELECT org_id, 0 FROM tenants) AS today
     GROUP BY org_id`,
    [day],
  );
}

export function readDailyBudgets(db: Queryable): Promise<TenantValue[]> {
  return tenantRows(db, "SELECT org_id AS tenant, daily_budget AS value FROM tenants WHERE daily_budget IS NOT NULL");
}

export function readAuditHeadSeqs(db: Queryable): Promise<TenantValue[]> {
  return tenantRows(db, "SELECT org_id AS tenant, seq AS value FROM audit_heads");
}

export function readAuditCheckpointSeqs(db: Queryable): Promise<TenantValue[]> {
  return tenantRows(db, "SELECT h.org_id AS tenant, coalesce((SELECT max(seq) FROM audit_checkpoints c WHERE c.org_id = h.org_id), 0) AS value FROM audit_heads h");
}

export async function readFlagValues(db: Queryable): Promise<FlagValue[]> {
  const { rows } = await db.query<{ name: string; scope_kind: string; scope: string; enabled: boolean }>(
    "SELECT name, scope_kind, scope, enabled FROM flags ORDER BY name, scope_kind, scope",
  );
  return rows.map((r) => ({ name: r.name, scopeKind: r.scope_kind, scope: r.scope, enabled: r.enabled }));
}

export async function readOutboxBacklog(db: Queryable): Promise<OutboxBacklog> {
  // The database's clock on both sides: created_at is its now() at insert.
  const { rows } = await db.query<{ n: number; age: number | string | null }>("SELECT count(*)::int AS n, extract(epoch FROM now() - min(created_at)) AS age FROM outbox");
  return { rows: rows[0]?.n ?? 0, oldestAgeSeconds: Number(rows[0]?.age ?? 0) };
}
