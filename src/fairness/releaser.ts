/**
 * The releaser: a shard owner's loop that lets held steps go (issue 15). Each round reads, in one statement, every
 * tenant's held and in-flight counts on the destinations that have held steps (all shards: fair shares are computed
 * over everyone, see fair-share.ts), plans the releases of the tenants this coordinator owns, picks their held steps
 * in order (priority, then arrival) and applies one `release` event per step through the fenced engine, which
 * checks the limits again under the task lock and governs the hop as any dispatch. A step released twice (two
 * owners around a takeover) is dispatched once: the second release finds it no longer `held`.
 *
 * Most releases happen inline, in the very batch that frees a slot (`inlineRelease`, engine.ts); the loop's rounds
 * every `pollMs` catch the rest (see `ReleaseLoop`). What a round reads goes through the held steps' port
 * (store/limits/held-step-store.ts).
 */
import type { Pool, Queryable } from "../store/db.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { sleep } from "../sleep.js";
import type { Engine, InlineRelease } from "../coordinator/engine.js";
import type { HeldReleases } from "../coordinator/held-releases.js";
import { applyIsolating, type DecodedEntry } from "../coordinator/isolated-apply.js";
import type { OutboxRow } from "../store/engine/engine-store.js";
import type { HeldLoad, HeldStepStore } from "../store/limits/held-step-store.js";
import { refill } from "../core/admission.js";
import { planReleases, type TenantDemand } from "./fair-share.js";
import { pairKey, type LimitSource, type LimitTable } from "../core/limits.js";

export interface ReleaserOptions {
  engine: Engine;
  pool: Pool;
  logger: Logger;
  limits: LimitSource;
  /** The held steps' reads (`runtime.stores.heldSteps`). */
  store: HeldStepStore;
  /** Whether this coordinator releases the tenant's steps now (owns its shard, its coordinator flag is on). */
  serves: (orgId: string) => boolean;
  clock: () => number;
  metrics?: Metrics;
  /** Steps released per round at most. @defaultValue 500 */
  batch?: number;
}

/** One round: releases what the limits and fair shares allow now; returns the outbox rows to publish. */
export async function releaseHeldSteps(options: ReleaserOptions): Promise<{ released: number; outbox: OutboxRow[] }> {
  const entries = await planRelease(options.pool, options);
  if (entries.length === 0) return { released: 0, outbox: [] };
  const result = await applyIsolating({ engine: options.engine, pool: options.pool, logger: options.logger }, entries);
  return { released: entries.length, outbox: result.outbox };
}

export type PlanOptions = Pick<ReleaserOptions, "limits" | "store" | "serves" | "clock" | "metrics" | "batch">;

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
  const loads = await options.store.loads(db, cap, destinations);
  const ours = [...new Set(loads.filter((l) => l.held > 0 && options.serves(l.orgId)).map((l) => l.orgId))];
  if (ours.length === 0) return [];
  const headroom = await readHeadroom(options.store, db, limits, ours, options.clock());
  const plans: Array<{ destination: string; order: string[] }> = [];
  const byDestination = new Map<string, HeldLoad[]>();
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
  const entries = await pickSteps(options.store, db, plans, batch);
  const now = options.clock();
  for (const entry of entries) options.metrics?.queueDelay.observe({ tenant: entry.input.orgId, destination: entry.destination }, Math.max(0, now - entry.heldAtMs) / 1000);
  return entries;
}

/**
 * The held-steps gauge: this coordinator's tenants only (another owner reports its own), exact (a full count: run
 * by the loop at most every `HELD_GAUGE_MS`, not per release).
 */
async function observeHeld(store: HeldStepStore, db: Queryable, metrics: Metrics, serves: (orgId: string) => boolean): Promise<void> {
  const counts = await store.countHeld(db);
  metrics.heldSteps.reset();
  for (const c of counts) if (serves(c.orgId)) metrics.heldSteps.set({ tenant: c.orgId, destination: c.destination }, c.n);
}

const HELD_GAUGE_MS = 2_000;

/**
 * How many more steps each of our tenants' own limits let go on a destination (max in flight there and overall,
 * the tokens in its bucket): planning past them would only make the engine hold the steps again.
 */
async function readHeadroom(
  store: HeldStepStore,
  db: Queryable,
  limits: LimitTable,
  orgIds: readonly string[],
  now: number,
): Promise<(orgId: string, destination: string, inFlight: number) => number | undefined> {
  const limited = orgIds.filter((o) => limits.tenantLimited(o));
  if (limited.length === 0) return () => undefined;
  const { inFlight: totals, buckets } = await store.usage(db, limited);
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

async function pickSteps(store: HeldStepStore, db: Queryable, plans: ReadonlyArray<{ destination: string; order: string[] }>, limit: number): Promise<ReleaseEntry[]> {
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
  const rows = await store.pick(db, asked);
  const queues = new Map<string, typeof rows>();
  for (const row of rows) {
    const key = pairKey(row.orgId, row.destination);
    queues.set(key, [...(queues.get(key) ?? []), row]);
  }
  const entries: ReleaseEntry[] = [];
  for (const plan of plans) {
    for (const orgId of plan.order) {
      const row = queues.get(pairKey(orgId, plan.destination))?.shift();
      if (!row || entries.length >= limit) continue;
      const eventId = `release:${row.taskId}:${row.stepId}:${row.seq}`;
      entries.push({ entryId: eventId, destination: row.destination, heldAtMs: row.heldAtMs, input: { orgId: row.orgId, taskId: row.taskId, event: { type: "release", eventId, stepId: row.stepId } } });
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
          await observeHeld(this.options.store, this.options.pool, this.options.metrics, this.options.serves);
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

/** The coordinator's releaser port (coordinator/held-releases.ts) over these dispatch limits and held steps' reads. */
export function heldStepReleases(limits: LimitSource, store: HeldStepStore): HeldReleases {
  return {
    inline: (context) => inlineRelease({ limits, store, ...context }),
    loop: (context) => new ReleaseLoop({ limits, store, ...context }),
  };
}
