/**
 * Per-tenant facts every hop of a batch sees: today's cost and daily budget and the foreign agents registered
 * idempotent, and whether A2A egress and origin replies are on (from the live flags). The engine adds each event's
 * cost to the running total, so later hops in the same batch see the earlier ones.
 *
 * The stored facts are read in the batch's transaction, after its tasks are locked, and are never cached: the
 * cost includes every accrual committed by then (other coordinators, task starts, callbacks), and a budget or
 * `idempotent` change applies from the next batch. They cost no round trip of their own: the engine's locked
 * read of its tasks carries them (`storedTenantFactsColumn`, evaluated once per statement), and `get` reads them
 * in a statement of their own only when that read did not (a batch that spans a UTC midnight, a caller without it).
 */
import { costDay } from "../../domain.js";
import type { Queryable } from "../db.js";
import type { StoredTenantFacts, TenantFactsSource } from "./engine-store.js";

/** The flag lookups tenant facts need; satisfied by the live flags. */
export interface EgressSwitch {
  egressEnabled(orgId: string): boolean;
}

/** Whether origin replies are on for a tenant (REPLY_ENABLED); satisfied by the live flags. */
export interface ReplySwitch {
  replyEnabled(orgId: string): boolean;
}

/**
 * A SELECT-list expression: the stored facts of the tenants in `orgsParam` (a `text[]` parameter) for the day in
 * `dayParam`, as JSON text `{"org": [cost, budget, [agent, …]]}`. Uncorrelated, so Postgres evaluates it once per
 * statement (an InitPlan) whatever the row count; text, so the driver does not parse it once per row.
 */
export function storedTenantFactsColumn(orgsParam: string, dayParam: string): string {
  return `(SELECT coalesce(json_object_agg(o.org_id, json_build_array(
       (SELECT cost FROM tenant_daily_cost d WHERE d.org_id = o.org_id AND d.day = ${dayParam}::date),
       (SELECT daily_budget FROM tenants t WHERE t.org_id = o.org_id),
       ARRAY(SELECT agent_key FROM foreign_agents f WHERE f.org_id = o.org_id AND f.idempotent ORDER BY agent_key))), '{}')::text
     FROM unnest(${orgsParam}::text[]) AS o(org_id))`;
}

/** Parses what `storedTenantFactsColumn` returned for `day`. */
export function parseStoredTenantFacts(text: string | null | undefined, day: string): Map<string, StoredTenantFacts> {
  const parsed = JSON.parse(text ?? "{}") as Record<string, [number | null, number | null, string[] | null]>;
  const facts = new Map<string, StoredTenantFacts>();
  for (const [orgId, [cost, budget, idempotent]] of Object.entries(parsed)) {
    facts.set(orgId, { day, dailyCost: cost ?? 0, dailyBudget: budget, idempotentForeignAgents: idempotent ?? [] });
  }
  return facts;
}

async function readStoredTenantFacts(db: Queryable, orgId: string, day: string): Promise<StoredTenantFacts> {
  const { rows } = await db.query<{ facts: string }>(`SELECT ${storedTenantFactsColumn("$1", "$2")} AS facts`, [[orgId], day]);
  return parseStoredTenantFacts(rows[0]?.facts, day).get(orgId) ?? { day, dailyCost: 0, dailyBudget: null, idempotentForeignAgents: [] };
}

export function createTenantFactsSource(options: { egress?: EgressSwitch; replies?: ReplySwitch } = {}): TenantFactsSource {
  return {
    async get(orgId, db, nowMs, stored) {
      const day = costDay(nowMs);
      const facts = stored?.day === day ? stored : await readStoredTenantFacts(db, orgId, day);
      return {
        dailyCost: facts.dailyCost,
        dailyBudget: facts.dailyBudget,
        idempotentForeignAgents: new Set(facts.idempotentForeignAgents),
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
