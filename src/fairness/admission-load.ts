/**
 * What admission reads and writes in the engine's transaction: the load of the batch's tenants and destinations
 * (one statement), the held-step rows and the token buckets.
 *
 * A tenant with limits of its own is admitted under a transaction-scoped advisory lock of that tenant, taken before
 * its load is read: the shard owner and a gateway starting a task inline then count each other's dispatches, so a
 * tenant cap is exact. A destination's capacity is read without a lock (one lock per destination would serialise
 * every coordinator on a hot role): two coordinators committing at once can each take the last slot, so the
 * capacity may be overshot by a batch's worth; it is a throttle, not a guarantee (README, Tenant fairness).
 */
import type { Queryable } from "../store/db.js";
import type { AdmissionFacts, Bucket, DestinationLoad, TenantLoad } from "./admission.js";
import { pairKey, type LimitTable } from "./limits.js";
import type { CoordinatorEvent, TaskState } from "../coordinator/model.js";

/** Advisory-lock namespace of tenant admission (`pg_advisory_xact_lock(ns, hashtext(org))`). */
const ADMISSION_LOCK_NAMESPACE = 0x5f15;

/** A step held back, as written to `held_steps`. */
export interface HeldStep {
  orgId: string;
  taskId: string;
  stepId: string;
  destination: string;
  /** 1–5, higher first within the tenant. */
  priority: number;
  concurrencyKey: string | null;
  reason: string;
  heldAtMs: number;
}

/**
 * The admission facts of a batch, or undefined when no (tenant, destination) pair of it is governed (no limit
 * applies: nothing is read). `pairs` are the destinations each tenant of the batch may dispatch to.
 */
export async function loadAdmission(client: Queryable, limits: LimitTable, pairs: ReadonlyMap<string, ReadonlySet<string>>): Promise<AdmissionFacts | undefined> {
  if (limits.empty) return undefined;
  const orgs: string[] = [];
  const destinations = new Set<string>();
  for (const [orgId, dests] of pairs) {
    let governed = false;
    for (const d of dests) {
      if (!limits.governs(orgId, d)) continue;
      governed = true;
      destinations.add(d);
    }
    if (governed) orgs.push(orgId);
  }
  if (orgs.length === 0) return undefined;
  orgs.sort();
  for (const orgId of orgs) if (limits.tenantLimited(orgId)) await client.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))", [ADMISSION_LOCK_NAMESPACE, orgId]);
  const dests = [...destinations].sort();
  const capped = dests.filter((d) => limits.capacity(d) !== undefined);
  const totals = orgs.filter((o) => limits.tenantMaxInFlight(o) !== undefined);
  const { rows } = await client.query<{ dests: Array<[string, string, string]>; flying: Array<[string, string, string]>; held: Array<[string, string, string]>; totals: Array<[string, string]>; buckets: Array<[string, string, number, string]> }>(
    `SELECT
       (SELECT coalesce(json_agg(json_build_array(l.destination, l.in_flight, l.held)), '[]') FROM switchyard_destination_load($3::text[]) l) AS dests,
       (SELECT coalesce(json_agg(json_build_array(x.org_id, x.destination, x.n)), '[]') FROM
          (SELECT org_id, destination, count(*) AS n FROM steps WHERE status = 'dispatched' AND destination = ANY($2::text[]) AND org_id = ANY($1::text[]) GROUP BY 1, 2) x) AS flying,
       (SELECT coalesce(json_agg(json_build_array(x.org_id, x.destination, x.n)), '[]') FROM
          (SELECT org_id, destination, count(*) AS n FROM held_steps WHERE destination = ANY($2::text[]) AND org_id = ANY($1::text[]) GROUP BY 1, 2) x) AS held,
       (SELECT coalesce(json_agg(json_build_array(x.org_id, x.n)), '[]') FROM
          (SELECT org_id, count(*) AS n FROM steps WHERE status = 'dispatched' AND org_id = ANY($4::text[]) GROUP BY 1) x) AS totals,
       (SELECT coalesce(json_agg(json_build_array(b.org_id, b.destination, b.tokens, b.at_ms)), '[]') FROM dispatch_buckets b WHERE b.org_id = ANY($1::text[])) AS buckets`,
    [orgs, dests, capped, totals],
  );
  const row = rows[0]!;
  const destLoads = new Map<string, DestinationLoad>();
  for (const [d, inFlight, held] of row.dests) destLoads.set(d, { inFlight: Number(inFlight), held: Number(held) });
  const tenants = new Map<string, TenantLoad>();
  const tenant = (orgId: string): TenantLoad => {
    let load = tenants.get(orgId);
    if (!load) tenants.set(orgId, (load = { inFlight: 0, byDestination: new Map(), heldByDestination: new Map() }));
    return load;
  };
  for (const [o, d, n] of row.flying) tenant(o).byDestination.set(d, Number(n));
  for (const [o, d, n] of row.held) tenant(o).heldByDestination.set(d, Number(n));
  for (const [o, n] of row.totals) tenant(o).inFlight = Number(n);
  const buckets = new Map<string, Bucket>();
  for (const [o, d, tokens, atMs] of row.buckets) buckets.set(pairKey(o, d), { tokens: Number(tokens), atMs: Number(atMs) });
  return { limits, destinations: destLoads, tenants, buckets };
}

/**
 * Writes the batch's admission outcome: new held rows (a step held again keeps its place and gets the new reason),
 * the rows of steps no longer held, and the buckets drawn from.
 */
export async function saveAdmission(
  client: Queryable,
  held: readonly HeldStep[],
  released: ReadonlyArray<{ taskId: string; stepId: string }>,
  buckets: ReadonlyArray<{ orgId: string; destination: string } & Bucket>,
): Promise<void> {
  if (released.length > 0) {
    await client.query(
      `DELETE FROM held_steps h USING unnest($1::uuid[], $2::text[]) AS x(task_id, step_id) WHERE h.task_id = x.task_id AND h.step_id = x.step_id`,
      [released.map((r) => r.taskId), released.map((r) => r.stepId)],
    );
  }
  if (held.length > 0) {
    await client.query(
      `INSERT INTO held_steps (org_id, task_id, step_id, destination, priority, concurrency_key, reason, held_at_ms)
       SELECT x.org_id, x.task_id, x.step_id, x.destination, x.priority, x.concurrency_key, x.reason, x.held_at_ms
       FROM json_to_recordset($1::json) AS x(org_id text, task_id uuid, step_id text, destination text, priority smallint, concurrency_key text, reason text, held_at_ms bigint)
       ON CONFLICT (task_id, step_id) DO UPDATE SET reason = EXCLUDED.reason`,
      [
        JSON.stringify(
          held.map((h) => ({ org_id: h.orgId, task_id: h.taskId, step_id: h.stepId, destination: h.destination, priority: h.priority, concurrency_key: h.concurrencyKey, reason: h.reason, held_at_ms: h.heldAtMs })),
        ),
      ],
    );
  }
  if (buckets.length > 0) {
    await client.query(
      `INSERT INTO dispatch_buckets (org_id, destination, tokens, at_ms)
       SELECT * FROM unnest($1::text[], $2::text[], $3::float8[], $4::bigint[])
       ON CONFLICT (org_id, destination) DO UPDATE SET tokens = EXCLUDED.tokens, at_ms = EXCLUDED.at_ms`,
      [buckets.map((b) => b.orgId), buckets.map((b) => b.destination), buckets.map((b) => b.tokens), buckets.map((b) => Math.round(b.atMs))],
    );
  }
}

/**
 * Every destination each tenant of the batch may dispatch to: its workflows' steps, the steps it has (delegations
 * included) and the sub-queries the batch asks for.
 */
export function destinationsOf(states: ReadonlyMap<string, TaskState>, inputs: ReadonlyArray<{ orgId: string; event: CoordinatorEvent }>): Map<string, Set<string>> {
  const pairs = new Map<string, Set<string>>();
  const add = (orgId: string, destination: string) => {
    let set = pairs.get(orgId);
    if (!set) pairs.set(orgId, (set = new Set()));
    set.add(destination);
  };
  for (const { task, workflow, steps } of states.values()) {
    for (const def of workflow.steps) add(task.orgId, `${def.to.kind}:${def.to.id}`);
    for (const step of steps.values()) add(task.orgId, step.destination);
  }
  for (const input of inputs) if (input.event.type === "query") for (const q of input.event.queries) add(input.orgId, q.destination);
  return pairs;
}
