/**
 * The coordinator process: consumes the inboxes of the tenant shards it owns (RESULT / QUERY / CONTROL) in batches,
 * applies each batch through the engine in one transaction, acknowledges after commit, then publishes what the
 * batch produced. Beside it run the shard ownership loop (leases, hand-overs), the sweeper (timeouts and retry
 * backoff, for owned tenants only), the outbox relay and stream trimming. Several coordinators split the shards;
 * every transaction proves its fencing token (shard-leases.ts), and row locks and status guards keep every
 * transition single even where two processes meet (task starts and approvals through the API).
 */
import { sleep } from "../sleep.js";
import type { EnvelopeVerifier } from "../bus/auth/bus-auth.js";
import { COORDINATOR_STREAM, type Bus, type BusEntry } from "../bus/bus.js";
import { InboxReader } from "./inbox-reader.js";
import { ShardOwnership } from "./shard-ownership.js";
import { DEFAULT_SHARD_COUNT, inboxOf } from "./shards.js";
import { ErrorCode, isSwitchyardError } from "../errors.js";
import { DependencyHealth, outageBackoffMs } from "../dependency-health.js";
import type { Pool } from "../store/db.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import type { Engine } from "./engine.js";
import { InboxIntake, type AppliedBatch } from "./inbox-intake.js";
import type { OutboxPublisher } from "./outbox-publisher.js";
import type { CoordinatorFlags, TenantSelection } from "../flags/flag-types.js";
import { TenantHold } from "../flags/tenant-hold.js";
import { approvalExpirySweep } from "../approvals/expiry.js";
import { checkpointJobOf, type CheckpointJob } from "../governance/checkpoint-job.js";
import { fireDueSteps } from "./due-steps.js";
import { runPeriodically } from "./periodic-job.js";
import { repairStrandedSteps } from "./stranded-steps.js";
import { trimProcessedEnvelopes } from "./processed-envelopes.js";
import type { LimitSource } from "../fairness/limits.js";
import { inlineRelease, ReleaseLoop } from "../fairness/releaser.js";

export { COORDINATOR_GROUP } from "./inbox-intake.js";
import { COORDINATOR_GROUP } from "./inbox-intake.js";

/** Applied envelope ids are kept this long by default (config: SWITCHYARD_DEDUPE_RETENTION_MS). */
const DEFAULT_DEDUPE_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** How often a paused coordinator (BUS_ENABLED off) looks at the flag again. */
const PAUSE_CHECK_MS = 200;
/** After the bus comes back, due steps wait for the inbox backlog to be read, but never longer than this. */
const CATCH_UP_LIMIT_MS = 10_000;


export interface CoordinatorOptions {
  pool: Pool;
  bus: Bus;
  engine: Engine;
  publisher: OutboxPublisher;
  /**
   * Authenticates every inbox entry (`runtime.busAuth.verifier()`): one without a valid MAC is dead-lettered,
   * never applied, and the rest carry their proven sender into the engine (README, Bus authentication).
   */
  verifier: EnvelopeVerifier;
  consumer: string;
  batchSize: number;
  blockMs: number;
  reclaimIdleMs: number;
  sweepIntervalMs: number;
  trimMaxLen: number;
  /** How long applied envelope ids are kept for dedupe (ms). @defaultValue 7 days */
  dedupeRetentionMs?: number;
  logger?: Logger;
  metrics?: Metrics;
  clock?: () => number;
  /**
   * BUS_ENABLED and COORDINATOR_ENABLED (live flags). Bus off: nothing is read, published or swept. A tenant
   * off: its inbox messages move to its hold stream and its due steps wait; re-enabled, the held messages are
   * applied (before its due steps fire). @defaultValue everything on
   */
  flags?: CoordinatorFlags;
  /** Runs at the end of every sweep with its time. @defaultValue expires overdue approvals (src/approvals/expiry.ts) */
  onSweep?: (now: number) => Promise<unknown>;
  /** Signs audit chain heads periodically; `false` turns it off. @defaultValue every 1000 rows or 60 s per tenant (src/governance/checkpoint-job.ts) */
  checkpoints?: CheckpointJob | false;
  /**
   * How often the sweep looks for stranded steps (pending, every need complete: a lost transition) and how long
   * such a step must have been quiet first; `false` turns it off. @defaultValue every 10 s, quiet for 5 s
   */
  strandedRepair?: { intervalMs: number; quietMs: number } | false;
  /**
   * Where failures caused by an unreachable Postgres or Redis go: logged once per outage there, and the loop backs
   * off (up to 5 s) instead of logging each failed round. @defaultValue one of its own
   */
  health?: DependencyHealth;
  /** More periodic jobs run beside the loops, e.g. the A2A sender and sweep (`runtime.foreignJobs`). */
  background?: ReadonlyArray<{ name: string; intervalMs: number; run: (now: number) => Promise<unknown> }>;
  /** Tenant shards (config.shards): how many, and how long a lease lasts. @defaultValue 64 shards, 5 s */
  shards?: { count: number; leaseTtlMs: number };
  /**
   * Dispatch limits (issue 15, `runtime.limits`): with them, a loop beside the inbox releases the held steps of the
   * tenants this coordinator owns (src/fairness/releaser.ts). @defaultValue no releaser (held steps wait)
   */
  limits?: LimitSource;
}

export class Coordinator {
  private readonly logger: Logger;
  private readonly health: DependencyHealth;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  private readonly clock: () => number;
  /** Streams this process published to, trimmed periodically. */
  private readonly streams = new Set<string>([COORDINATOR_STREAM]);
  /** The acknowledgement and publish of the last committed batch, running while the next batch is applied. */
  private finishing: Promise<void> = Promise.resolve();
  /** Holds and later applies the inbox messages of tenants switched off (only with flags). */
  private readonly hold: TenantHold<AppliedBatch> | undefined;
  /** The default sweep hook: overdue approvals of the tenants served now are denied. */
  private readonly expireApprovals: (now: number) => Promise<unknown>;
  /** When the bus was last (re)enabled or an outage ended, and when an inbox read last came back short (the backlog was read). */
  private busOnSince = 0;
  private drainedAt = 0;
  /** The sweep saw Postgres or Redis unreachable and has not yet seen them both back. */
  private sawOutage = false;
  /** When the sweep last looked for stranded steps. */
  private repairedAt = 0;
  /** Authenticates, decodes, holds or refuses, and applies inbox entries. */
  private readonly intake: InboxIntake;
  /** The shards this coordinator owns (leases in Postgres). */
  readonly ownership: ShardOwnership;
  /** The engine, fenced: every transaction proves the leases of its tenants' shards. */
  private readonly engine: Engine;
  private readonly reader: InboxReader;
  /** The batch being applied now (awaited before a shard is handed over). */
  private applying: Promise<unknown> = Promise.resolve();
  /** Lets held steps go (with limits only). */
  private readonly releases: ReleaseLoop | undefined;
  constructor(private readonly options: CoordinatorOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "coordinator", consumer: options.consumer });
    this.clock = options.clock ?? Date.now;
    this.health = options.health ?? new DependencyHealth({ logger: this.logger });
    const shards = options.shards ?? { count: DEFAULT_SHARD_COUNT, leaseTtlMs: 5_000 };
    this.ownership = new ShardOwnership({
      pool: options.pool,
      coordinatorId: options.consumer,
      shardCount: shards.count,
      leaseTtlMs: shards.leaseTtlMs,
      logger: this.logger,
      onAcquired: async (acquired) => {
        options.metrics?.shardMoves.inc({ event: "acquired" }, acquired.length);
        await this.reader.acquired(acquired);
        // The shard's previous owner may have held messages of its tenants (COORDINATOR_ENABLED off for them).
        await this.hold?.discover(options.pool, { count: shards.count, owned: acquired });
      },
      beforeRelease: async (released) => {
        options.metrics?.shardMoves.inc({ event: "handed_over" }, released.length);
        // The shards are no longer read; what was read of them is applied and acknowledged before the lease goes.
        await this.applying.catch(() => {});
        await this.finishing;
      },
      onLost: (lost) => options.metrics?.shardMoves.inc({ event: "lost" }, lost.length),
      onChange: (owned) => {
        options.metrics?.shardOwned.reset();
        for (const shard of owned) options.metrics?.shardOwned.set({ shard: String(shard) }, 1);
      },
    });
    const serves = (orgId: string): boolean => this.ownership.ownsTenant(orgId) && this.tenantOn(orgId);
    this.engine = options.engine.fenced(this.ownership, options.limits ? inlineRelease({ limits: options.limits, serves, clock: this.clock, metrics: options.metrics }) : undefined);
    this.reader = new InboxReader({
      bus: options.bus,
      ownership: this.ownership,
      consumer: options.consumer,
      batchSize: options.batchSize,
      blockMs: options.blockMs,
      reclaimIdleMs: options.reclaimIdleMs,
      metrics: options.metrics,
      clock: this.clock,
      signal: this.abort.signal,
    });
    this.intake = new InboxIntake({
      ...options,
      engine: this.engine,
      logger: this.logger,
      hold: () => this.hold,
      tenantOn: (orgId) => this.tenantOn(orgId),
      routing: { owns: (orgId) => this.ownership.ownsTenant(orgId), inboxOf: (orgId) => inboxOf(orgId, shards.count) },
    });
    this.releases = options.limits
      ? new ReleaseLoop({
          engine: this.engine,
          pool: options.pool,
          logger: this.logger,
          limits: options.limits,
          serves,
          clock: this.clock,
          metrics: options.metrics,
          publish: async (rows) => {
            for (const row of rows) this.streams.add(row.stream);
            if (this.busOn()) await this.options.publisher.publish(rows);
          },
        })
      : undefined;
    this.expireApprovals = approvalExpirySweep({ ...options, engine: this.engine, logger: this.logger, tenants: () => this.servedTenants(), shards: () => this.ownership.ownedShards() });
    this.hold = options.flags
      ? new TenantHold<AppliedBatch>({
          bus: options.bus,
          flags: options.flags,
          consumer: options.consumer,
          reclaimIdleMs: options.reclaimIdleMs,
          batchSize: options.batchSize,
          group: COORDINATOR_GROUP,
          logger: this.logger,
          apply: (entries) => this.applyBatch(entries),
          publish: async (applied) => {
            for (const row of applied.outbox) this.streams.add(row.stream);
            await this.options.publisher.publish(applied.outbox);
          },
          running: () => !this.stopped,
          serves: (orgId) => this.ownership.ownsTenant(orgId),
        })
      : undefined;
  }

  /** Starts the loops; resolves once they have all stopped (after `close()` or the signal). */
  start(signal?: AbortSignal): Promise<void> {
    if (this.running) return this.running;
    signal?.addEventListener("abort", () => this.abort.abort(), { once: true });
    this.running = (async () => {
      await this.options.bus.ensureGroup(COORDINATOR_STREAM, COORDINATOR_GROUP);
      // The first shards before the first read; a database that is down is retried by the ownership loop, but a
      // shard count other than the recorded one stops the coordinator here.
      await this.ownership.prepare().catch((error: unknown) => {
        if (isSwitchyardError(error) && error.code === ErrorCode.Config) throw error;
        this.logger.warn({ err: error }, "could not take shards yet; retrying");
      });
      this.busOnSince = this.clock();
      const checkpoints = checkpointJobOf(this.options);
      const jobs = [...(checkpoints ? [{ name: "checkpoints", ...checkpoints }] : []), ...(this.options.background ?? [])];
      await Promise.all([
        this.ownership.run(this.abort.signal),
        this.inboxLoop(),
        this.periodic("sweep", this.options.sweepIntervalMs, () => this.sweepOnce()),
        this.periodic("trim", 10_000, () => this.trimOnce()),
        ...(this.releases ? [this.releases.run(this.abort.signal)] : []),
        // Jobs run once at start: e.g. the FOREIGN sender only reacts to kicks once it has run in this process.
        ...jobs.map((job) => this.periodic(job.name, job.intervalMs, () => job.run(this.clock()), { immediately: true })),
      ]);
      // Every loop has stopped and the last batch is acknowledged: the shards can go to the other coordinators now.
      await this.ownership.close();
    })();
    return this.running;
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.running?.catch(() => {});
    // Driven step by step (processBatch, sweepOnce) it still took shards: hand them over now.
    if (!this.running) await this.ownership.close();
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  /**
   * Reads, applies and acknowledges batches one after another (so per-stream order is kept within this process),
   * with two overlaps that keep the transaction's round trips off the critical path: the next batch is read while
   * the current one is applied, and a committed batch is acknowledged and published while the next is applied.
   * At most one batch waits to be published, so a slow bus holds the loop back instead of queueing rows in memory.
   */
  private async inboxLoop(): Promise<void> {
    let readAhead: Promise<BusEntry[]> | undefined;
    const next = (): Promise<BusEntry[]> => this.reader.next();
    let failures = 0;
    // A batch whose apply failed because Postgres or Redis was unreachable: applied again, before anything else is
    // read or reclaimed. Reading on during a long outage would only raise delivery counts (each reclaim is one)
    // until the entries reached the dead letters.
    let retrying: BusEntry[] | undefined;
    while (!this.stopped) {
      let entries: BusEntry[] | undefined;
      try {
        if (retrying) {
          entries = retrying;
          retrying = undefined;
        } else {
          if (!readAhead && !this.busOn()) {
            await this.pauseWhileBusOff();
            continue;
          }
          // The read-ahead is taken before it is awaited: one that failed is then given up after this round, not
          // awaited again (rejected) on every turn, which would stop the inbox for good.
          const reading = readAhead ?? next();
          const readEarly = readAhead !== undefined;
          readAhead = undefined;
          entries = await this.nextBatch(reading, readEarly);
          if (entries.length === 0) continue;
          if (!this.stopped && this.busOn()) {
            readAhead = next();
            // Awaited on the next turn of the loop; until then a failed read must not count as unhandled.
            readAhead.catch(() => {});
          }
        }
        const applying = this.applyBatch(entries);
        this.applying = applying;
        const applied = await applying;
        if (applied) await this.finishInBackground(applied);
        failures = 0;
      } catch (error) {
        if (this.stopped) break;
        failures += 1;
        if (isSwitchyardError(error) && error.code === ErrorCode.Fenced) {
          // Shards moved away mid-batch: nothing committed; the entries stay pending for their new owner (or, for
          // shards still ours, are read again by the reclaim).
          this.logger.warn({ err: error }, "batch fenced off: a shard of it has a new owner; its entries are left to that owner");
          continue;
        }
        if (this.health.absorb(error)) {
          retrying = entries;
          this.logger.debug({ err: error }, "coordinator inbox loop failed in an outage; backing off");
          await sleep(outageBackoffMs(failures), this.abort.signal);
        } else {
          this.logger.error({ err: error }, "coordinator inbox loop failed; retrying");
          await sleep(500, this.abort.signal);
        }
      }
    }
    // Entries a read handed us just before the stop are ours (pending under this consumer): apply them now
    // rather than leave them to a reclaim much later.
    const leftover = await readAhead?.catch(() => []);
    if (leftover && leftover.length > 0) {
      try {
        const applied = await this.applyBatch(leftover);
        if (applied) await this.finishInBackground(applied);
      } catch (error) {
        this.logger.error({ err: error }, "coordinator could not apply its last batch; it will be reclaimed");
      }
    }
    await this.finishing;
  }

  /**
   * The entries of a read. A read-ahead returns as soon as the first entries arrive, early in the previous apply;
   * what arrived during the rest of it joins this batch now (one non-blocking read) rather than making a batch of
   * its own.
   */
  private async nextBatch(pending: Promise<BusEntry[]>, readEarly: boolean): Promise<BusEntry[]> {
    let entries = await pending;
    if (readEarly && entries.length > 0 && entries.length < this.options.batchSize && !this.stopped && this.busOn()) {
      // The top-up only saves a round: if it fails, the entries already read (ours, pending) are applied alone
      // rather than dropped until a reclaim; whatever the failure was shows again on the next read.
      const more = await this.reader.topUp(this.options.batchSize - entries.length).catch((error: unknown) => {
        this.logger.debug({ err: error }, "topping up the inbox batch failed; applying what was read");
        return [];
      });
      entries = entries.concat(more);
    }
    if (entries.length < this.options.batchSize) this.drainedAt = this.clock();
    return entries;
  }

  private busOn(): boolean {
    return this.options.flags?.busEnabled() ?? true;
  }

  private tenantOn(orgId: string): boolean {
    return this.options.flags?.coordinatorEnabled(orgId) ?? true;
  }

  /** BUS_ENABLED is off: read nothing until it is on again. */
  private async pauseWhileBusOff(): Promise<void> {
    this.logger.info("BUS_ENABLED is off: not reading the inbox, publishing or sweeping until it is on again");
    while (!this.stopped && !this.busOn()) await sleep(PAUSE_CHECK_MS, this.abort.signal);
    if (this.stopped) return;
    this.busOnSince = this.clock();
    this.logger.info("BUS_ENABLED is on: reading the inbox again");
  }

  /**
   * Waits for the previous batch's acknowledgement and publish (keeping publish order = commit order), then starts
   * this batch's without waiting for it. A failed acknowledgement is logged: the entries are redelivered later and
   * the engine drops them as duplicates; a failed publish leaves the outbox rows to the relay sweep.
   */
  private async finishInBackground(applied: AppliedBatch): Promise<void> {
    await this.finishing;
    this.finishing = this.finish(applied).catch((error: unknown) => {
      if (this.health.absorb(error)) return;
      this.logger.warn({ err: error, entries: countAcks(applied) }, "acknowledging a committed batch failed; its entries will be redelivered and dropped as duplicates");
    });
  }

  private async finish(applied: AppliedBatch): Promise<void> {
    const acked = this.ack(applied);
    // Both go out in the same tick, so ioredis writes them back to back; the outbox publish never throws.
    // With the bus switched off meanwhile, the rows stay in the outbox for the relay once it is on again.
    const published = this.busOn() ? this.options.publisher.publish(applied.outbox) : Promise.resolve();
    await Promise.all([acked, published]);
  }

  /** Applies one batch, acknowledges and publishes it. Exposed for tests and benchmarks that drive the coordinator step by step. */
  async processBatch(entries: readonly BusEntry[]): Promise<void> {
    // Driven without start(): the shards are taken (and kept) here, as the ownership loop would.
    if (!this.running) await this.ownership.refresh();
    const applied = await this.applyBatch(entries);
    if (!applied) return;
    await this.ack(applied);
    if (this.busOn()) await this.options.publisher.publish(applied.outbox);
  }

  private async ack(applied: AppliedBatch): Promise<void> {
    await Promise.all([...applied.acks].map(([stream, ids]) => this.options.bus.ack(stream, COORDINATOR_GROUP, ids)));
  }

  /** See InboxIntake.apply; the streams it published to are trimmed later. */
  private async applyBatch(entries: readonly BusEntry[]): Promise<AppliedBatch | undefined> {
    const applied = await this.intake.apply(entries);
    for (const row of applied?.outbox ?? []) this.streams.add(row.stream);
    return applied;
  }

  /**
   * Fires due steps (timeouts, retry backoff) and publishes stale outbox rows. With BUS_ENABLED off it does
   * neither (a step's result may be waiting on the paused bus; outbox rows wait in Postgres).
   */
  async sweepOnce(): Promise<number> {
    // Driven without start() (tests): the shards are taken (and kept) here, as the ownership loop would.
    if (!this.running) await this.ownership.refresh();
    const now = this.clock();
    let fired = 0;
    if (this.busOn()) {
      await this.hold?.releaseEnabled();
      fired = await this.fireDue(now);
      await this.repairStrandedSteps(now);
      // The relay publishes inside the transaction that claimed the rows: with Redis away the publish would wait in
      // ioredis's queue while the session sat idle in its transaction until Postgres ended it (the lease TTL).
      if (this.health.isReachable("redis")) await this.options.publisher.sweep();
    }
    if (this.options.onSweep) await this.options.onSweep(now);
    // Expiry decides approvals and moves steps on: paused with the bus, and per tenant with its coordinator.
    else if (this.busOn()) await this.expireApprovals(now);
    return fired;
  }

  /** The tenants this coordinator serves now (COORDINATOR_ENABLED), as a SQL filter can use them. */
  private servedTenants(): TenantSelection {
    return this.options.flags?.coordinatorTenants?.() ?? { except: [] };
  }

  /** The due steps of tenants switched on; a tenant's held messages are applied before its steps time out. */
  private async fireDue(now: number): Promise<number> {
    // While Redis is away, finished work may be waiting in the harnesses to be published: no timeouts then.
    if (!this.health.isReachable("redis")) {
      this.sawOutage = true;
      return 0;
    }
    if (!this.health.isReachable("postgres")) {
      // Asked here rather than waited for: an idle coordinator may have nothing else that would find Postgres back.
      this.sawOutage = true;
      const askedAtMs = this.health.now();
      await this.options.pool.query("SELECT 1");
      this.health.reachable("postgres", askedAtMs);
    }
    if (this.sawOutage) {
      this.sawOutage = false;
      this.busOnSince = now;
    }
    // Right after the bus came back (switched on, or an outage ended), results may still be waiting in the inbox:
    // read them before timing out.
    if (this.drainedAt < this.busOnSince && now - this.busOnSince < CATCH_UP_LIMIT_MS) return 0;
    const { fired, outbox } = await fireDueSteps(
      { engine: this.engine, pool: this.options.pool, logger: this.logger },
      { now, tenants: this.servedTenants(), shards: this.ownership.ownedShards(), tenantOn: (orgId) => this.tenantOn(orgId), beforeFiring: this.hold ? (orgId) => this.hold!.release(orgId) : undefined },
    );
    for (const row of outbox) this.streams.add(row.stream);
    await this.options.publisher.publish(outbox);
    return fired;
  }

  /** Dispatches stranded steps (see stranded-steps.ts) of the tenants served now, at most every `intervalMs`. */
  private async repairStrandedSteps(now: number): Promise<void> {
    const repair = this.options.strandedRepair ?? { intervalMs: 10_000, quietMs: 5_000 };
    if (!repair || now - this.repairedAt < repair.intervalMs) return;
    this.repairedAt = now;
    // A repair that fails must not cost the rest of the sweep (the outbox relay, approval expiry): logged, retried next time.
    const outbox = await repairStrandedSteps(
      { engine: this.engine, pool: this.options.pool, logger: this.logger },
      { tenants: this.servedTenants(), shards: this.ownership.ownedShards(), tenantOn: (orgId) => this.tenantOn(orgId), quietMs: repair.quietMs },
    ).catch((error: unknown) => {
if (!this.health.absorb(error)) this.logger.error({ err: error }, "repairing stranded steps failed; retried on a later sweep");
      return [];
    });
    for (const row of outbox) this.streams.add(row.stream);
    await this.options.publisher.publish(outbox);
  }

  private async trimOnce(): Promise<void> {
    for (const stream of new Set([...this.streams, ...this.ownership.inboxes()])) await this.options.bus.trim(stream, this.options.trimMaxLen);
    const retentionMs = this.options.dedupeRetentionMs ?? DEFAULT_DEDUPE_RETENTION_MS;
    await trimProcessedEnvelopes(this.options.pool, retentionMs);
  }

  private periodic(name: string, intervalMs: number, run: () => Promise<unknown>, options: { immediately?: boolean } = {}): Promise<void> {
    return runPeriodically({ name, intervalMs, run, ...options, signal: this.abort.signal, health: this.health, logger: this.logger });
  }
}

function countAcks(applied: AppliedBatch): number {
  let n = 0;
  for (const ids of applied.acks.values()) n += ids.length;
  return n;
}
