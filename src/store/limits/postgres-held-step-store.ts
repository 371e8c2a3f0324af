/**
 * The Postgres adapter of the held steps' port (held-step-store.ts): the releaser's reads, one SQL operation per
 * function. The held-step counts use a skip scan of the queue index (one probe per pair) and count at most `cap`
 * per pair: a share or a release is never more than a destination's capacity or a round's batch, and counting a
 * backlog of thousands in every batch that frees a slot was most of what releasing cost.
 */
import { pairKey } from "../../core/limits.js";
import type { Queryable } from "../db.js";
import type { HeldLoad, HeldStepStore, PickedHeldStep, TenantUsage } from "./held-step-store.js";

export function createPostgresHeldStepStore(): HeldStepStore {
  return { loads: readHeldLoads, usage: readTenantUsage, pick: pickHeldSteps, countHeld: countHeldSteps };
}

export async function readHeldLoads(db: Queryable, cap: number, only?: readonly string[]): Promise<HeldLoad[]> {
  const { rows } = await db.query<{ destination: string; org_id: string; in_flight: number; held: number }>(
    // A held step whose concurrency key is at its limit cannot take a slot: it is not counted as waiting for one.
    `WITH RECURSIVE pairs AS (
       (SELECT destination, org_id FROM held_steps WHERE $1::text[] IS NULL OR destination = ANY($1::text[]) ORDER BY destination, org_id LIMIT 1)
       UNION ALL
       SELECT n.destination, n.org_id FROM pairs p CROSS JOIN LATERAL
         (SELECT h.destination, h.org_id FROM held_steps h
          WHERE (h.destination, h.org_id) > (p.destination, p.org_id) AND ($1::text[] IS NULL OR h.destination = ANY($1::text[]))
          ORDER BY h.destination, h.org_id LIMIT 1) n),
          counted AS (
       SELECT p.destination, p.org_id,
              (SELECT count(*) FROM (SELECT 1 FROM held_steps h WHERE h.destination = p.destination AND h.org_id = p.org_id AND h.concurrency_key IS NULL LIMIT $2) c)::int AS n
       FROM pairs p
       UNION ALL
       SELECT destination, org_id, count(*)::int FROM switchyard_releasable_keyed($1::text[])
       WHERE EXISTS (SELECT 1 FROM held_steps WHERE concurrency_key IS NOT NULL AND ($1::text[] IS NULL OR destination = ANY($1::text[])))
       GROUP BY 1, 2),
          held AS (SELECT destination, org_id, sum(n)::int AS n FROM counted GROUP BY 1, 2 HAVING sum(n) > 0),
          flying AS (SELECT destination, org_id, count(*)::int AS n FROM steps
                     WHERE status = 'dispatched' AND destination IN (SELECT DISTINCT destination FROM held) GROUP BY 1, 2)
     SELECT coalesce(h.destination, f.destination) AS destination, coalesce(h.org_id, f.org_id) AS org_id,
            coalesce(f.n, 0) AS in_flight, coalesce(h.n, 0) AS held
     FROM held h FULL JOIN flying f ON f.destination = h.destination AND f.org_id = h.org_id`,
    [only ?? null, cap],
  );
  return rows.map((r) => ({ destination: r.destination, orgId: r.org_id, inFlight: r.in_flight, held: r.held }));
}

export async function readTenantUsage(db: Queryable, orgIds: readonly string[]): Promise<TenantUsage> {
  const { rows } = await db.query<{ totals: Array<[string, number]>; buckets: Array<[string, string, number, string]> }>(
    `SELECT
       (SELECT coalesce(json_agg(json_build_array(org_id, n)), '[]') FROM
          (SELECT org_id, count(*)::int AS n FROM steps WHERE status = 'dispatched' AND org_id = ANY($1::text[]) GROUP BY 1) x) AS totals,
       (SELECT coalesce(json_agg(json_build_array(org_id, destination, tokens, at_ms)), '[]') FROM dispatch_buckets WHERE org_id = ANY($1::text[])) AS buckets`,
    [orgIds],
  );
  return {
    inFlight: new Map(rows[0]!.totals.map(([o, n]) => [o, Number(n)])),
    buckets: new Map(rows[0]!.buckets.map(([o, d, tokens, at]) => [pairKey(o, d), { tokens: Number(tokens), atMs: Number(at) }])),
  };
}

export async function pickHeldSteps(db: Queryable, asked: ReadonlyArray<{ destination: string; orgId: string; n: number }>): Promise<PickedHeldStep[]> {
  // Steps without a key straight from the queue index; steps with one only within their key's room.
  const { rows } = await db.query<{ org_id: string; destination: string; task_id: string; step_id: string; seq: string; held_at_ms: string }>(
    `WITH keyed AS (SELECT * FROM switchyard_releasable_keyed($4::text[])
                    WHERE EXISTS (SELECT 1 FROM held_steps WHERE concurrency_key IS NOT NULL AND destination = ANY($4::text[])))
     SELECT h.org_id, h.destination, h.task_id, h.step_id, h.seq, h.held_at_ms
     FROM unnest($1::text[], $2::text[], $3::int[]) AS x(destination, org_id, n)
     CROSS JOIN LATERAL (
       SELECT * FROM (
         (SELECT org_id, destination, task_id, step_id, seq, held_at_ms, priority FROM held_steps h
          WHERE h.destination = x.destination AND h.org_id = x.org_id AND h.concurrency_key IS NULL ORDER BY priority DESC, seq LIMIT x.n)
         UNION ALL
         (SELECT org_id, destination, task_id, step_id, seq, held_at_ms, priority FROM keyed k
          WHERE k.destination = x.destination AND k.org_id = x.org_id ORDER BY priority DESC, seq LIMIT x.n)
       ) u ORDER BY priority DESC, seq LIMIT x.n) h`,
    [asked.map((a) => a.destination), asked.map((a) => a.orgId), asked.map((a) => a.n), [...new Set(asked.map((a) => a.destination))]],
  );
  return rows.map((r) => ({ orgId: r.org_id, destination: r.destination, taskId: r.task_id, stepId: r.step_id, seq: r.seq, heldAtMs: Number(r.held_at_ms) }));
}

export async function countHeldSteps(db: Queryable): Promise<Array<{ destination: string; orgId: string; n: number }>> {
  const { rows } = await db.query<{ destination: string; org_id: string; n: number }>("SELECT destination, org_id, count(*)::int AS n FROM held_steps GROUP BY 1, 2");
  return rows.map((r) => ({ destination: r.destination, orgId: r.org_id, n: r.n }));
}
