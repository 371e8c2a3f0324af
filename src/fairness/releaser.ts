/**
 * The releaser: a shard owner's loop that lets held steps go (issue 15). Each round reads, in one statement, every
 * tenant's held and in-flight counts on the destinations that have held steps (all shards: fair shares are computed
 * over everyone, see fair-share.ts), plans the releases of the tenants this coordinator owns, picks their held steps
 * in order (priority, then arrival) and applies one `release` event per step through the fenced engine, which
 * checks the limits again under the task lock and governs the hop as any dispatch. A step released twice (two
 * owners around a takeover) is dispatched once: the second release finds it no longer `held`.
 *
 * Most releases happen inline, in the very batch that frees a slot (`inlineRelease`, engine.ts); the loop's rounds
 * every `pollMs` catch the rest (see `ReleaseLoop`).
 */
import type { Pool, Queryable } from "../store/db.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { sleep } from "../sleep.js";
import type { Engine, InlineRelease } from "../coordinator/engine.js";
import type { HeldReleases } from "../coordinator/held-releases.js";
import { applyIsolating, type DecodedEntry } from "../coordinator/isolated-apply.js";
import type { OutboxRow } from "../store/engine/engine-store.js";
import { refill } from "../core/admission.js";
import { planReleases, type TenantDemand } from "./fair-share.js";
import { pairKey, type LimitSource, type LimitTable } from "../core/limits.js";

export interface ReleaserOptions {
  engine: Engine;
  pool: Pool;
  logger: Logger;
  limits: LimitSource;
  /** Whether this coordinator releases the tenant's steps now (owns its shard, its coordinator flag is on). */
  serves: (orgId: string) => boolean;
  clock: () => number;
  metrics?: Metrics;
  /** Steps released per round at most. @defaultValue 500 */
  batch?: number;
}

interface Load {
  destination: string;
  orgId: string;
  inFlight: number;
  held: number;
}

/** One round: releases what the limits and fair shares allow now; returns the outbox rows to publish. */
export async function releaseHeldSteps(options: ReleaserOptions): Promise<{ released: number; outbox: OutboxRow[] }> {
  const entries = await planRelease(options.pool, options);
  if (entries.length === 0) return { released: 0, outbox: [] };
  const result = await applyIsolating({ engine: options.engine, pool: options.pool, logger: options.logger }, entries);
  return { released: entries.length, outbox: result.outbox };
}

export type PlanOptions = Pick<ReleaserOptions, "limits" | "serves" | "clock" | "metrics" | "batch">;

/**
 * The engine's inline release (engine.ts `releaseInline`): the same plan, read inside the transaction of a batch
 * that freed slots on `destinations`, so it sees the batch's own writes.
 */
export function inlineRelease(options: PlanOptions): InlineRelease {
  return { plan: async (client, destinations) => (await planRelease(client, options, destinations)).map((e) => e.input) };
}

/**
 * The held steps to release now, in release order: on every destination with held steps, or on `destinations`
 * only (an inline release, which leaves the held-steps gauge to the loop's rounds).
 */
async function planRelease(db: Queryable, options: PlanOptions, destinations?: readonly string[]): Promise<ReleaseEntry[]> {
  const limits = options.limits.limits();
  const batch = options.batch ?? 500;
  const cap = Math.max(batch, ...limits.destinations().map((d) => limits.capacity(d) ?? 0));
  const loads = await readLoads(db, cap, destinations);
  const ours = [...new Set(loads.filter((l) => l.held > 0 && options.serves(l.orgId)).map((l) => l.orgId))];
  if (ours.length === 0) return [];
  const headroom = await readHeadroom(db, limits, ours, options.clock());
  const plans: Array<{ destination: string; order: string[] }> = [];
  const byDestination = new Map<string, Load[]>();
  for (const load of loads) byDestination.set(load.destination, [...(byDestination.get(load.destination) ?? []), load]);
  for (const [destination, rows] of byDestination) {
    if (!rows.some((r) => r.held > 0 && options.serves(r.orgId))) continue;
    const demands: TenantDemand[] = rows.map((r) => {
      const room = options.serves(r.orgId) ? headroom(r.orgId, destination, r.inFlight) : undefined;
      return { orgId: r.orgId, weight: limits.weight(r.orgId), inFlight: r.inFlight, held: r.held, ours: options.serves(r.orgId), ...(room !== undefined ? { headroom: room } : {}) };
    });
    const order = planReleases(limits.capacity(destination), demands);
    if (order.length > 0) plans.push({ destination, order: order.slice(0, batch) });
  }
  if (plans.length === 0) return [];
  const entries = await pickSteps(db, plans, batch);
  const now = options.clock();
  for (const entry of entries) options.metrics?.queueDelay.observe({ tenant: entry.input.orgId, destination: entry.destination }, Math.max(0, now - entry.heldAtMs) / 1000);
  return entries;
}

/**
 * The held-steps gauge: this coordinator's tenants only (another owner reports its own), exact (a full count: run
 * by the loop at most every `HELD_GAUGE_MS`, not per release).
 */
async function observeHeld(db: Queryable, metrics: Metrics, serves: (orgId: string) => boolean): Promise<void> {
  const { rows } = await db.query<{ destination: string; org_id: string; n: number }>("SELECT destination, org_id, count(*)::int AS n FROM held_steps GROUP BY 1, 2");
  metrics.heldSteps.reset();
  for (const r of rows) if (serves(r.org_id)) metrics.heldSteps.set({ tenant: r.org_id, destination: r.destination }, r.n);
}

const HELD_GAUGE_MS = 2_000;

/**
 * Held and in-flight counts per (destination, tenant), on every destination that has held steps (of `only`). Held
 * steps are counted up to `cap` per pair, found by a skip scan of the queue index (one probe per pair): a share or a
 * release is never more than a destination's capacity or a round's batch, and counting a backlog of thousands
 * in every batch that frees a slot was most of what releasing cost.
 */
async function readLoads(db: Queryable, cap: number, only?: readonly string[]): Promise<Load[]> {
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

/**
 * How many more steps each of our tenants' own limits let go on a destination (max in flight there and overall,
 * the tokens in its bucket): planning past them would only make the engine hold the steps again.
 */
async function readHeadroom(db: Queryable, limits: LimitTable, orgIds: readonly string[], now: number): Promise<(orgId: string, destination: string, inFlight: number) => number | undefined> {
  const limited = orgIds.filter((o) => limits.tenantLimited(o));
  if (limited.length === 0) return () => undefined;
  const { rows } = await db.query<{ totals: Array<[string, number]>; buckets: Array<[string, string, number, string]> }>(
    `SELECT
       (SELECT coalesce(json_agg(json_build_array(org_id, n)), '[]') FROM
          (SELECT org_id, count(*)::int AS n FROM steps WHERE status = 'dispatched' AND org_id = ANY($1::text[]) GROUP BY 1) x) AS totals,
       (SELECT coalesce(json_agg(json_build_array(org_id, destination, tokens, at_ms)), '[]') FROM dispatch_buckets WHERE org_id = ANY($1::text[])) AS buckets`,
    [limited],
  );
  const totals = new Map(rows[0]!.totals.map(([o, n]) => [o, Number(n)]));
  const buckets = new Map(rows[0]!.buckets.map(([o, d, tokens, at]) => [pairKey(o, d), { tokens: Number(tokens), atMs: Number(at) }]));
  return (orgId, destination, inFlight) => {
    if (!limits.tenantLimited(orgId)) return undefined;
    let room = Number.POSITIVE_INFINITY;
    const pairMax = limits.maxInFlight(orgId, destination);
    if (pairMax !== undefined) room = Math.min(room, pairMax - inFlight);
    const tenantMax = limits.tenantMaxInFlight(orgId);
    if (tenantMax !== undefined) room = Math.min(room, tenantMax - (totals.get(orgId) ?? 0));
    const rate = limits.rate(orgId, destination);
    if (rate) room = Math.min(room, Math.floor(refill(buckets.get(pairKey(orgId, destination)), rate, now).tokens));
    return room === Number.POSITIVE_INFINITY ? undefined : Math.max(0, room);
  };
}

/**
 * The held steps the plans name, each tenant's in its order (priority, then arrival), interleaved as planned: one
 * `release` event each, in one engine batch.
 */
type ReleaseEntry = DecodedEntry & { destination: string; heldAtMs: number };

async function pickSteps(db: Queryable, plans: ReadonlyArray<{ destination: string; order: string[] }>, limit: number): Promise<ReleaseEntry[]> {
  const wanted = new Map<string, { destination: string; orgId: string; n: number }>();
  for (const plan of plans) {
    for (const orgId of plan.order) {
      const key = pairKey(orgId, plan.destination);
      const w = wanted.get(key) ?? { destination: plan.destination, orgId, n: 0 };
      w.n += 1;
      wanted.set(key, w);
    }
  }
  const asked = [...wanted.values()];
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
  const queues = new Map<string, typeof rows>();
  for (const row of rows) {
    const key = pairKey(row.org_id, row.destination);
    queues.set(key, [...(queues.get(key) ?? []), row]);
  }
  const entries: ReleaseEntry[] = [];
  for (const plan of plans) {
    for (const orgId of plan.order) {
      const row = queues.get(pairKey(orgId, plan.destination))?.shift();
      if (!row || entries.length >= limit) continue;
      const eventId = `release:${row.task_id}:${row.step_id}:${row.seq}`;
      entries.push({ entryId: eventId, destination: row.destination, heldAtMs: Number(row.held_at_ms), input: { orgId: row.org_id, taskId: row.task_id, event: { type: "release", eventId, stepId: row.step_id } } });
    }
  }
  return entries;
}

export interface ReleaseLoopOptions extends ReleaserOptions {
  /** Publishes what a round released (the coordinator's outbox publisher). */
  publish: (rows: OutboxRow[]) => Promise<void>;
  /** Wait between rounds. @defaultValue 50 ms with limits in force, 200 ms without (concurrency keys only) */
  pollMs?: number;
}

/**
 * Runs `releaseHeldSteps` every `pollMs`, one round at a time, until the signal. A slot freed by this coordinator's
 * own batches is taken inline (engine.ts `releaseInline`); the rounds are for what no batch of ours sees: a slot
 * freed by another coordinator's tenant, a token that refilled, a step an inline release skipped (its task was
 * locked), the first round after a shard moved here.
 */
export class ReleaseLoop {
  constructor(private readonly options: ReleaseLoopOptions) {}

  async run(signal: AbortSignal): Promise<void> {
    let gaugedAt = 0;
    while (!signal.aborted) {
      const idleMs = this.options.pollMs ?? (this.options.limits.limits().empty ? 200 : 50);
      await sleep(idleMs, signal, { unref: true });
      if (signal.aborted) break;
      try {
        const started = performance.now();
        const { released, outbox } = await releaseHeldSteps(this.options);
        if (this.options.metrics && performance.now() - gaugedAt >= HELD_GAUGE_MS) {
          gaugedAt = performance.now();
          await observeHeld(this.options.pool, this.options.metrics, this.options.serves);
        }
        if (released > 0) this.options.logger.debug({ released, published: outbox.length, ms: Math.round(performance.now() - started) }, "held steps released");
        if (outbox.length > 0) await this.options.publish(outbox);
      } catch (error) {
        this.options.logger.warn({ err: error }, "releasing held steps failed; retried on the next round");
        await sleep(200, signal);
      }
    }
  }
}

/** The coordinator's releaser port (coordinator/held-releases.ts) over these dispatch limits. */
export function heldStepReleases(limits: LimitSource): HeldReleases {
  return {
    inline: (context) => inlineRelease({ limits, ...context }),
    loop: (context) => new ReleaseLoop({ limits, ...context }),
  };
}
