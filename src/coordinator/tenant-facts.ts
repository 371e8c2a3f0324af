/**
 * Per-tenant facts every hop of a batch sees: today's cost and daily budget and the foreign agents registered
 * idempotent (read in the batch's transaction), and whether A2A egress is on (from the live flags). The engine adds each event's cost to the running total,
 * so later hops in the same batch see the earlier ones.
 */
import type { TenantFacts } from "../domain.js";
import type { Queryable } from "../store/db.js";

export interface TenantFactsSource {
  get(orgId: string, db: Queryable, nowMs: number): Promise<TenantFacts>;
}

/** The flag lookups tenant facts need; satisfied by the live flags. */
export interface EgressSwitch {
  egressEnabled(orgId: string): boolean;
}

/** Whether origin replies are on for a tenant (REPLY_ENABLED); satisfied by the live flags. */
export interface ReplySwitch {
  replyEnabled(orgId: string): boolean;
}

/** The UTC day a cost is accrued to. */
export function costDay(nowMs: number): string {
  return new Date(nowMs).toISOString().slice(0, 10);
}

export function createTenantFactsSource(options: { egress?: EgressSwitch; replies?: ReplySwitch } = {}): TenantFactsSource {
  return {
    async get(orgId, db, nowMs) {
      const { rows } = await db.query<{ cost: number | null; daily_budget: number | null; idempotent: string[] | null }>(
        `SELECT (SELECT cost FROM tenant_daily_cost WHERE org_id = $1 AND day = $2::date) AS cost,
                (SELECT daily_budget FROM tenants WHERE org_id = $1) AS daily_budget,
                ARRAY(SELECT agent_key FROM foreign_agents WHERE org_id = $1 AND idempotent) AS idempotent`,
        [orgId, costDay(nowMs)],
      );
      return {
        dailyCost: rows[0]?.cost ?? 0,
        dailyBudget: rows[0]?.daily_budget ?? null,
        idempotentForeignAgents: new Set(rows[0]?.idempotent ?? []),
        // Dormant by default: without a flag source, nothing leaves the perimeter.
        egressEnabled: options.egress?.egressEnabled(orgId) ?? false,
        // Off without a flag source too: replies spend a tenant's credential outside the perimeter.
        replyEnabled: options.replies?.replyEnabled(orgId) ?? false,
      };
    },
  };
}

/** Adds per-tenant cost deltas to today's totals: one statement for the whole batch. */
export async function accrueDailyCost(db: Queryable, deltas: ReadonlyMap<string, number>, nowMs: number): Promise<void> {
  const entries = [...deltas].filter(([, delta]) => delta !== 0);
  if (entries.length === 0) return;
  await db.query(
    `INSERT INTO tenant_daily_cost (org_id, day, cost)
     SELECT org_id, $3::date, delta FROM unnest($1::text[], $2::double precision[]) AS x(org_id, delta)
     ON CONFLICT (org_id, day) DO UPDATE SET cost = tenant_daily_cost.cost + EXCLUDED.cost`,
    [entries.map(([org]) => org), entries.map(([, delta]) => delta), costDay(nowMs)],
  );
}
