/**
 * The coordinator's periodic sweeps, for the tenants it serves now (shards it owns, COORDINATOR_ENABLED): due
 * steps (timeouts, retry backoff), stranded-step repair, the outbox relay and approval expiry; and the trim of the
 * streams it published to and of the applied envelope ids; then the sweep jobs it was handed (approval expiry, from
 * src/approvals/expiry.ts, is the composition roots' one). Due steps wait while the bus may still hold results
 * for them (an outage or BUS_ENABLED off just ended and the inbox backlog is not read yet).
 */
import { COORDINATOR_STREAM, type Bus } from "../bus/bus.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import type { CoordinatorFlags, TenantSelection } from "../flags/flag-types.js";
import type { TenantHold } from "../flags/tenant-hold.js";
import type { Logger } from "../logger.js";
import type { Pool } from "../store/db.js";
import type { SweepStore } from "../store/coordinator/coordinator-store.js";
import { fireDueSteps } from "./due-steps.js";
import type { Engine } from "./engine.js";
import type { AppliedBatch } from "./inbox-intake.js";
import type { OutboxPublisher } from "./outbox-publisher.js";
import type { OwnedShards, ShardOwnership } from "./shard-ownership.js";
import { FIRST_STEP_QUIET_FACTOR, repairStrandedSteps } from "./stranded-steps.js";

/** Applied envelope ids are kept this long by default (config: SWITCHYARD_DEDUPE_RETENTION_MS). */
const DEFAULT_DEDUPE_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** After the bus comes back, due steps wait for the inbox backlog to be read, but never longer than this. */
const CATCH_UP_LIMIT_MS = 10_000;

/** What a sweep job is given: the coordinator's own (fenced) engine and publisher, and what it serves now. */
export interface SweepJobContext {
  pool: Pool;
  engine: Engine;
  publisher: OutboxPublisher;
  logger: Logger;
  /** Asked at every sweep: the tenants whose coordinator is switched on. */
  tenants: () => TenantSelection;
  /** Asked at every sweep: the shards this coordinator owns. */
  shards: () => OwnedShards;
}

/**
 * A job run at the end of every sweep while the bus is on, built once per coordinator from its context. Handed in
 * (not imported) so the coordinator knows no feature that moves steps on from outside it.
 */
export type SweepJob = (context: SweepJobContext) => (now: number) => Promise<unknown>;

export interface SweepsOptions {
  pool: Pool;
  /** What the sweeps read and trim (due and stranded steps, the outage probe, applied envelope ids). */
  store: { sweeps: SweepStore };
  bus: Bus;
  /** The coordinator's engine, fenced by its shard leases. */
  engine: Engine;
  publisher: OutboxPublisher;
  ownership: ShardOwnership;
  health: DependencyHealth;
  logger: Logger;
  clock: () => number;
  flags?: CoordinatorFlags;
  /** Holds the inbox messages of tenants switched off (only with flags): applied before their due steps fire. */
  hold?: TenantHold<AppliedBatch>;
  busOn: () => boolean;
  tenantOn: (orgId: string) => boolean;
  trimMaxLen: number;
  dedupeRetentionMs?: number;
  onSweep?: (now: number) => Promise<unknown>;
  jobs?: readonly SweepJob[];
  strandedRepair?: { intervalMs: number; quietMs: number } | false;
}

export class Sweeps {
  /** Streams this process published to, trimmed periodically. */
  private readonly streams = new Set<string>([COORDINATOR_STREAM]);
  private readonly jobs: ReadonlyArray<(now: number) => Promise<unknown>>;
  /** When the bus was last (re)enabled or an outage ended, and when an inbox read last came back short (the backlog was read). */
  private busOnSince = 0;
  private drainedAt = 0;
  /** The sweep saw Postgres or Redis unreachable and has not yet seen them both back. */
  private sawOutage = false;
  /** When the sweep last looked for stranded steps. */
  private repairedAt = 0;

  constructor(private readonly options: SweepsOptions) {
    const { pool, engine, publisher, logger, ownership } = options;
    const context: SweepJobContext = { pool, engine, publisher, logger, tenants: () => this.servedTenants(), shards: () => ownership.ownedShards() };
    this.jobs = (options.jobs ?? []).map((job) => job(context));
  }

  /** Records the streams of rows published (or to be), for the trim. */
  published(rows: Iterable<{ stream: string }>): void {
    for (const row of rows) this.streams.add(row.stream);
  }

  /** The bus is on again (started, or BUS_ENABLED switched back on). */
  busBack(at: number): void {
    this.busOnSince = at;
  }

  /** An inbox read came back short: the backlog has been read. */
  inboxDrained(at: number): void {
    this.drainedAt = at;
  }

  /**
   * Fires due steps (timeouts, retry backoff) and publishes stale outbox rows. With BUS_ENABLED off it does
   * neither (a step's result may be waiting on the paused bus; outbox rows wait in Postgres).
   */
  async sweepOnce(): Promise<number> {
    const { options } = this;
    const now = options.clock();
    let fired = 0;
    if (options.busOn()) {
      await options.hold?.releaseEnabled();
      fired = await this.fireDue(now);
      await this.repairStrandedSteps(now);
      // The relay publishes inside the transaction that claimed the rows: with Redis away the publish would wait in
      // ioredis's queue while the session sat idle in its transaction until Postgres ended it (the lease TTL).
      if (options.health.isReachable("redis")) await options.publisher.sweep();
    }
    if (options.onSweep) await options.onSweep(now);
    // Jobs (approval expiry) decide and move steps on: paused with the bus, and per tenant with its coordinator.
    else if (options.busOn()) for (const job of this.jobs) await job(now);
    return fired;
  }

  async trimOnce(): Promise<void> {
    for (const stream of new Set([...this.streams, ...this.options.ownership.inboxes()])) await this.options.bus.trim(stream, this.options.trimMaxLen);
    const retentionMs = this.options.dedupeRetentionMs ?? DEFAULT_DEDUPE_RETENTION_MS;
    await this.options.store.sweeps.trimProcessedEnvelopes(this.options.pool, retentionMs);
  }

  /** The tenants this coordinator serves now (COORDINATOR_ENABLED), as a SQL filter can use them. */
  private servedTenants(): TenantSelection {
    return this.options.flags?.coordinatorTenants?.() ?? { except: [] };
  }

  /** The due steps of tenants switched on; a tenant's held messages are applied before its steps time out. */
  private async fireDue(now: number): Promise<number> {
    const { health, hold } = this.options;
    // While Redis is away, finished work may be waiting in the harnesses to be published: no timeouts then.
    if (!health.isReachable("redis")) {
      this.sawOutage = true;
      return 0;
    }
    if (!health.isReachable("postgres")) {
      // Asked here rather than waited for: an idle coordinator may have nothing else that would find Postgres back.
      this.sawOutage = true;
      const askedAtMs = health.now();
      await this.options.store.sweeps.probe(this.options.pool);
      health.reachable("postgres", askedAtMs);
    }
    if (this.sawOutage) {
      this.sawOutage = false;
      this.busOnSince = now;
    }
    // Right after the bus came back (switched on, or an outage ended), results may still be waiting in the inbox:
    // read them before timing out.
    if (this.drainedAt < this.busOnSince && now - this.busOnSince < CATCH_UP_LIMIT_MS) return 0;
    const { fired, outbox } = await fireDueSteps(
      { engine: this.options.engine, pool: this.options.pool, logger: this.options.logger, store: this.options.store.sweeps },
      { now, tenants: this.servedTenants(), shards: this.options.ownership.ownedShards(), tenantOn: this.options.tenantOn, beforeFiring: hold ? (orgId) => hold.release(orgId) : undefined },
    );
    this.published(outbox);
    await this.options.publisher.publish(outbox);
    return fired;
  }

  /** Dispatches stranded steps (see stranded-steps.ts) of the tenants served now, at most every `intervalMs`. */
  private async repairStrandedSteps(now: number): Promise<void> {
    const repair = this.options.strandedRepair ?? { intervalMs: 10_000, quietMs: 5_000 };
    if (!repair || now - this.repairedAt < repair.intervalMs) return;
    this.repairedAt = now;
    // A Redis outage may have taken envelopes published just before it with it (a restart without its data), a
    // task's start event among them: a first step's long quiet time (its start may wait in a busy inbox) would leave
    // such a task waiting a minute. For a while after Redis came back, first steps count after the usual quiet time.
    const { health } = this.options;
    const redisBack = health.lastRecoveryMs("redis");
    const recentLoss = redisBack !== undefined && health.now() - redisBack < repair.quietMs * FIRST_STEP_QUIET_FACTOR;
    // A repair that fails must not cost the rest of the sweep (the outbox relay, approval expiry): logged, retried next time.
    const outbox = await repairStrandedSteps(
      { engine: this.options.engine, pool: this.options.pool, logger: this.options.logger, store: this.options.store.sweeps },
      {
        tenants: this.servedTenants(),
        shards: this.options.ownership.ownedShards(),
        tenantOn: this.options.tenantOn,
        quietMs: repair.quietMs,
        ...(recentLoss ? { firstStepQuietMs: repair.quietMs } : {}),
      },
    ).catch((error: unknown) => {
      if (!this.options.health.absorb(error)) this.options.logger.error({ err: error }, "repairing stranded steps failed; retried on a later sweep");
      return [];
    });
    this.published(outbox);
    await this.options.publisher.publish(outbox);
  }
}
