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
import type { Queryable } from "../db.js";
import { HELD_COUNT_CAP, type AdmissionFacts, type Bucket, type DestinationLoad, type KeyLoad, type TenantLoad } from "../../core/admission.js";
import { concurrencyGroupOf } from "../../core/concurrency-key.js";
import { pairKey, type LimitTable } from "../../core/limits.js";
import type { CoordinatorEvent, TaskState } from "../../core/model.js";
import type { HeldStep } from "../../core/held-step.js";

/** Advisory-lock namespace of tenant admission (`pg_advisory_xact_lock(ns, hashtext(org))`). */
const ADMISSION_LOCK_NAMESPACE = 0x5f15;


/** What a batch may dispatch: each tenant's destinations, and the concurrency keys of its tasks' steps. */
export interface AdmissionScope {
  pairs: Map<string, Set<string>>;
  keys: Map<string, Set<string>>;
}

/**
 * The admission facts of a batch, or undefined when nothing of it is governed (no limit applies and no step has a
 * concurrency key: nothing is read).
 */
export async function loadAdmission(client: Queryable, limits: LimitTable, scope: AdmissionScope): Promise<AdmissionFacts | undefined> {
  const orgs: string[] = [];
  const destinations = new Set<string>();
  for (const [orgId, dests] of scope.pairs) {
    let governed = scope.keys.has(orgId);
    for (const d of dests) {
      if (!limits.governs(orgId, d)) continue;
      governed = true;
      destinations.add(d);
    }
    if (governed) orgs.push(orgId);
  }
  if (orgs.length === 0) return undefined;
  orgs.sort();
  // Keys are counted like a tenant cap: exactly, under the tenant's lock (the gateway starts tasks inline too).
  for (const orgId of orgs) if (limits.tenantLimited(orgId) || scope.keys.has(orgId)) await client.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))", [ADMISSION_LOCK_NAMESPACE, orgId]);
  const keyed = [...scope.keys].flatMap(([orgId, keys]) => [...keys].map((key) => [orgId, key] as const));
  const dests = [...destinations].sort();
  const capped = dests.filter((d) => limits.capacity(d) !== undefined);
  const totals = orgs.filter((o) => limits.tenantMaxInFlight(o) !== undefined);
  const { rows } = await client.query<{
    dests: Array<[string, string, string]>;
    flying: Array<[string, string, string]>;
    held: Array<[string, string, string, string]>;
    totals: Array<[string, string]>;
    buckets: Array<[string, string, number, string]>;
    keys: Array<[string, string, string, string]>;
  }>(
    `SELECT
       (SELECT coalesce(json_agg(json_build_array(l.destination, l.in_flight, l.held)), '[]') FROM switchyard_destination_load($3::text[], $7) l) AS dests,
       (SELECT coalesce(json_agg(json_build_array(x.org_id, x.destination, x.n)), '[]') FROM
          (SELECT org_id, destination, count(*) AS n FROM steps WHERE status = 'dispatched' AND destination = ANY($2::text[]) AND org_id = ANY($1::text[]) GROUP BY 1, 2) x) AS flying,
       (SELECT coalesce(jsonb_agg(jsonb_build_array(x.org_id, x.destination, x.n, 0)), '[]') FROM
          (SELECT o.org_id, d.destination,
                  (SELECT count(*) FROM (SELECT 1 FROM held_steps h WHERE h.destination = d.destination AND h.org_id = o.org_id AND h.concurrency_key IS NULL LIMIT $7) c) AS n
           FROM unnest($1::text[]) AS o(org_id) CROSS JOIN unnest($2::text[]) AS d(destination)) x WHERE x.n > 0)
       || (SELECT coalesce(jsonb_agg(jsonb_build_array(x.org_id, x.destination, 0, x.n)), '[]') FROM
          (SELECT org_id, destination, count(*) AS n FROM held_steps WHERE org_id = ANY($1::text[]) AND concurrency_key IS NOT NULL GROUP BY 1, 2) x) AS held,
       (SELECT coalesce(json_agg(json_build_array(x.org_id, x.n)), '[]') FROM
          (SELECT org_id, count(*) AS n FROM steps WHERE status = 'dispatched' AND org_id = ANY($4::text[]) GROUP BY 1) x) AS totals,
       (SELECT coalesce(json_agg(json_build_array(b.org_id, b.destination, b.tokens, b.at_ms)), '[]') FROM dispatch_buckets b WHERE b.org_id = ANY($1::text[])) AS buckets,
       (SELECT coalesce(json_agg(json_build_array(k.org_id, k.key, k.flying, k.held)), '[]') FROM
          (SELECT w.org_id, w.key,
                  (SELECT count(*) FROM steps s WHERE s.status = 'dispatched' AND s.org_id = w.org_id AND s.concurrency_key = w.key) AS flying,
                  (SELECT count(*) FROM held_steps h WHERE h.org_id = w.org_id AND h.concurrency_key = w.key) AS held
           FROM unnest($5::text[], $6::text[]) AS w(org_id, key)) k) AS keys`,
    [orgs, dests, capped, totals, keyed.map(([o]) => o), keyed.map(([, k]) => k), HELD_COUNT_CAP],
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
  for (const [o, d, n, keyedHeld] of row.held) {
    if (Number(n) > 0) tenant(o).heldByDestination.set(d, Number(n));
    if (Number(keyedHeld) > 0) (tenant(o).keyedHeldByDestination ??= new Map()).set(d, Number(keyedHeld));
  }
  const keys = new Map<string, KeyLoad>();
  for (const [o, k, flying, held] of row.keys) keys.set(pairKey(o, k), { inFlight: Number(flying), held: Number(held) });
  for (const [o, n] of row.totals) tenant(o).inFlight = Number(n);
  const buckets = new Map<string, Bucket>();
  for (const [o, d, tokens, atMs] of row.buckets) buckets.set(pairKey(o, d), { tokens: Number(tokens), atMs: Number(atMs) });
  return { limits, destinations: destLoads, tenants, buckets, keys };
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
      `INSERT INTO held_steps (org_id, task_id, step_id, destination, priority, concurrency_key, concurrency_limit, reason, held_at_ms)
       SELECT x.org_id, x.task_id, x.step_id, x.destination, x.priority, x.concurrency_key, x.concurrency_limit, x.reason, x.held_at_ms
       FROM json_to_recordset($1::json) AS x(org_id text, task_id uuid, step_id text, destination text, priority smallint, concurrency_key text,
         concurrency_limit integer, reason text, held_at_ms bigint)
       ON CONFLICT (task_id, step_id) DO UPDATE SET reason = EXCLUDED.reason`,
      [
        JSON.stringify(
          held.map((h) => ({
            org_id: h.orgId, task_id: h.taskId, step_id: h.stepId, destination: h.destination, priority: h.priority,
            concurrency_key: h.concurrencyKey, concurrency_limit: h.concurrencyLimit, reason: h.reason, held_at_ms: h.heldAtMs,
          })),
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
 * What the batch may dispatch: every destination of each tenant (its workflows' steps, the steps it has,
 * delegations included, and the sub-queries the batch asks for) and the concurrency keys of its tasks' steps.
 */
export function admissionScope(states: ReadonlyMap<string, TaskState>, inputs: ReadonlyArray<{ orgId: string; event: CoordinatorEvent }>): AdmissionScope {
  const pairs = new Map<string, Set<string>>();
  const keys = new Map<string, Set<string>>();
  const add = (map: Map<string, Set<string>>, orgId: string, value: string) => {
    let set = map.get(orgId);
    if (!set) map.set(orgId, (set = new Set()));
    set.add(value);
  };
  for (const { task, workflow, steps } of states.values()) {
    for (const def of workflow.steps) {
      add(pairs, task.orgId, `${def.to.kind}:${def.to.id}`);
      const group = concurrencyGroupOf(def, task.input);
      if (group) add(keys, task.orgId, group.key);
    }
    for (const step of steps.values()) add(pairs, task.orgId, step.destination);
  }
  for (const input of inputs) if (input.event.type === "query") for (const q of input.event.queries) add(pairs, input.orgId, q.destination);
  return { pairs, keys };
}

/** Whether a step of these tasks has a concurrency key: admission runs for them even with no limits set. */
export function anyConcurrencyKey(states: ReadonlyMap<string, TaskState>): boolean {
  for (const { workflow } of states.values()) if (workflow.steps.some((s) => s.concurrency)) return true;
  return false;
}
