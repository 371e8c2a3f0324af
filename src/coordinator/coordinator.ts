/**
 * The coordinator process: consumes its inbox (RESULT / QUERY / CONTROL) in batches, applies each batch through
 * the engine in one transaction, acknowledges after commit, then publishes what the batch produced. Beside it
 * run the sweeper (timeouts and retry backoff), the outbox relay and stream trimming. Several coordinators may
 * run against the same streams and database: row locks and status guards keep every transition single.
 */
import { sleep } from "../sleep.js";
import type { EnvelopeVerifier } from "../bus/auth/bus-auth.js";
import { COORDINATOR_STREAM, type Bus, type BusEntry } from "../bus/bus.js";
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

export { COORDINATOR_GROUP } from "./inbox-intake.js";
import { COORDINATOR_GROUP } from "./inbox-intake.js";

/** With live flags, blocking reads are cut short this often so a flag change applies well within 2 s. */
const FLAG_READ_BLOCK_CAP_MS = 500;
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

  constructor(private readonly options: CoordinatorOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "coordinator", consumer: options.consumer });
    this.clock = options.clock ?? Date.now;
    this.health = options.health ?? new DependencyHealth({ logger: this.logger });
    this.intake = new InboxIntake({
      ...options,
      logger: this.logger,
      hold: () => this.hold,
      tenantOn: (orgId) => this.tenantOn(orgId),
    });
    this.expireApprovals = approvalExpirySweep({ ...options, logger: this.logger, tenants: () => this.servedTenants() });
    this.hold = options.flags
      ? new TenantHold<AppliedBatch>({
          bus: options.bus,
          flags: options.flags,
          consumer: options.consumer,
          reclaimIdleMs: options.reclaimIdleMs,
          batchSize: options.batchSize,
          inbox: COORDINATOR_STREAM,
          group: COORDINATOR_GROUP,
          logger: this.logger,
          apply: (entries, stream) => this.applyBatch(entries, stream),
          publish: async (applied) => {
            for (const row of applied.outbox) this.streams.add(row.stream);
            await this.options.publisher.publish(applied.outbox);
          },
          running: () => !this.stopped,
        })
      : undefined;
  }

  /** Starts the loops; resolves once they have all stopped (after `close()` or the signal). */
  start(signal?: AbortSignal): Promise<void> {
    if (this.running) return this.running;
    signal?.addEventListener("abort", () => this.abort.abort(), { once: true });
    this.running = (async () => {
      await this.options.bus.ensureGroup(COORDINATOR_STREAM, COORDINATOR_GROUP);
      this.busOnSince = this.clock();
      await this.hold?.discover(this.options.pool);
      const checkpoints = checkpointJobOf(this.options);
      const jobs = [...(checkpoints ? [{ name: "checkpoints", ...checkpoints }] : []), ...(this.options.background ?? [])];
      await Promise.all([
        this.inboxLoop(),
        this.periodic("sweep", this.options.sweepIntervalMs, () => this.sweepOnce()),
        this.periodic("trim", 10_000, () => this.trimOnce()),
        // Jobs run once at start: e.g. the FOREIGN sender only reacts to kicks once it has run in this process.
        ...jobs.map((job) => this.periodic(job.name, job.intervalMs, () => job.run(this.clock()), { immediately: true })),
      ]);
    })();
    return this.running;
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.running?.catch(() => {});
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
    let lastReclaim = 0;
    let readAhead: Promise<BusEntry[]> | undefined;
    const next = (): Promise<BusEntry[]> => {
      if (this.clock() - lastReclaim >= this.options.reclaimIdleMs / 2) {
        lastReclaim = this.clock();
        return this.reclaimOrRead();
      }
      return this.readInbox();
    };
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
        const applied = await this.applyBatch(entries);
        if (applied) await this.finishInBackground(applied);
        failures = 0;
      } catch (error) {
        if (this.stopped) break;
        failures += 1;
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
      const more = await this.topUp(this.options.batchSize - entries.length).catch((error: unknown) => {
        this.logger.debug({ err: error }, "topping up the inbox batch failed; applying what was read");
        return [];
      });
      entries = entries.concat(more);
    }
    if (entries.length < this.options.batchSize) this.drainedAt = this.clock();
    return entries;
  }

  private async reclaimOrRead(): Promise<BusEntry[]> {
    const { bus, batchSize, consumer, reclaimIdleMs } = this.options;
    const entries = await bus.reclaim({ stream: COORDINATOR_STREAM, group: COORDINATOR_GROUP, consumer, minIdleMs: reclaimIdleMs, count: batchSize });
    if (entries.length > 0) {
      this.options.metrics?.reclaims.inc({ stream: COORDINATOR_STREAM }, entries.length);
      return entries;
    }
    return this.readInbox();
  }

  /** New entries already waiting, without blocking. */
  private topUp(count: number): Promise<BusEntry[]> {
    const { bus, consumer } = this.options;
    return bus.read({ stream: COORDINATOR_STREAM, group: COORDINATOR_GROUP, consumer, count, blockMs: 0, signal: this.abort.signal });
  }

  private readInbox(): Promise<BusEntry[]> {
    const { bus, batchSize, consumer } = this.options;
    const blockMs = this.options.flags ? Math.min(this.options.blockMs, FLAG_READ_BLOCK_CAP_MS) : this.options.blockMs;
    return bus.read({ stream: COORDINATOR_STREAM, group: COORDINATOR_GROUP, consumer, count: batchSize, blockMs, signal: this.abort.signal });
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
      this.logger.warn({ err: error, entries: applied.ackIds.length }, "acknowledging a committed batch failed; its entries will be redelivered and dropped as duplicates");
    });
  }

  private async finish(applied: AppliedBatch): Promise<void> {
    const acked = this.options.bus.ack(COORDINATOR_STREAM, COORDINATOR_GROUP, applied.ackIds);
    // Both go out in the same tick, so ioredis writes them back to back; the outbox publish never throws.
    // With the bus switched off meanwhile, the rows stay in the outbox for the relay once it is on again.
    const published = this.busOn() ? this.options.publisher.publish(applied.outbox) : Promise.resolve();
    await Promise.all([acked, published]);
  }

  /** Applies one batch, acknowledges and publishes it. Exposed for tests and benchmarks that drive the coordinator step by step. */
  async processBatch(entries: readonly BusEntry[]): Promise<void> {
    const applied = await this.applyBatch(entries);
    if (!applied) return;
    await this.options.bus.ack(COORDINATOR_STREAM, COORDINATOR_GROUP, applied.ackIds);
    if (this.busOn()) await this.options.publisher.publish(applied.outbox);
  }

  /** See InboxIntake.apply; the streams it published to are trimmed later. */
  private async applyBatch(entries: readonly BusEntry[], stream: string = COORDINATOR_STREAM): Promise<AppliedBatch | undefined> {
    const applied = await this.intake.apply(entries, stream);
    for (const row of applied?.outbox ?? []) this.streams.add(row.stream);
    return applied;
  }

  /**
   * Fires due steps (timeouts, retry backoff) and publishes stale outbox rows. With BUS_ENABLED off it does
   * neither (a step's result may be waiting on the paused bus; outbox rows wait in Postgres).
   */
  async sweepOnce(): Promise<number> {
    const now = this.clock();
    let fired = 0;
    if (this.busOn()) {
      await this.hold?.releaseEnabled();
      fired = await this.fireDue(now);
      await this.repairStrandedSteps(now);
      await this.options.publisher.sweep();
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
      await this.options.pool.query("SELECT 1");
      this.health.reachable("postgres");
    }
    if (this.sawOutage) {
      this.sawOutage = false;
      this.busOnSince = now;
    }
    // Right after the bus came back (switched on, or an outage ended), results may still be waiting in the inbox:
    // read them before timing out.
    if (this.drainedAt < this.busOnSince && now - this.busOnSince < CATCH_UP_LIMIT_MS) return 0;
    const { fired, outbox } = await fireDueSteps(
      { engine: this.options.engine, pool: this.options.pool, logger: this.logger },
      { now, tenants: this.servedTenants(), tenantOn: (orgId) => this.tenantOn(orgId), beforeFiring: this.hold ? (orgId) => this.hold!.release(orgId) : undefined },
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
      { engine: this.options.engine, pool: this.options.pool, logger: this.logger },
      { tenants: this.servedTenants(), tenantOn: (orgId) => this.tenantOn(orgId), quietMs: repair.quietMs },
    ).catch((error: unknown) => {
      if (!this.health.absorb(error)) this.logger.error({ err: error }, "repairing stranded steps failed; retried on a later sweep");
      return [];
    });
    for (const row of outbox) this.streams.add(row.stream);
    await this.options.publisher.publish(outbox);
  }

  private async trimOnce(): Promise<void> {
    for (const stream of this.streams) await this.options.bus.trim(stream, this.options.trimMaxLen);
    await this.options.pool.query("DELETE FROM processed_envelopes WHERE processed_at < now() - interval '7 days'");
  }

  private periodic(name: string, intervalMs: number, run: () => Promise<unknown>, options: { immediately?: boolean } = {}): Promise<void> {
    return runPeriodically({ name, intervalMs, run, ...options, signal: this.abort.signal, health: this.health, logger: this.logger });
  }
}
