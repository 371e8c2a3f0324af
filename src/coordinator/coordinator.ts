/**
 * The coordinator process: consumes the inboxes of the tenant shards it owns (RESULT / QUERY / CONTROL) in batches,
 * applies each batch through the engine in one transaction, acknowledges after commit, then publishes what the
 * batch produced. Beside it run the shard ownership loop (leases, hand-overs), the sweeper (timeouts and retry
 * backoff, for owned tenants only), the outbox relay and stream trimming. Several coordinators split the shards;
 * every transaction proves its fencing token (store/shards/), and row locks and status guards keep every
 * transition single even where two processes meet (task starts and approvals through the API).
 */
import type { EnvelopeVerifier } from "../bus/auth/bus-auth.js";
import { COORDINATOR_STREAM, type Bus, type BusEntry } from "../bus/bus.js";
import { InboxReader } from "./inbox-reader.js";
import { ShardOwnership } from "./shard-ownership.js";
import { DEFAULT_SHARD_COUNT, inboxOf } from "../bus/shards.js";
import { ErrorCode, isSwitchyardError, SwitchyardError } from "../errors.js";
import { DependencyHealth } from "../process/dependency-health.js";
import type { Pool } from "../store/db.js";
import type { FlagStore } from "../store/flags/flag-store.js";
import type { CoordinatorStore } from "../store/coordinator/coordinator-store.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Engine } from "./engine.js";
import { InboxIntake, type AppliedBatch } from "./inbox-intake.js";
import { InboxLoop } from "./inbox-loop.js";
import type { OutboxPublisher } from "./outbox-publisher.js";
import type { CoordinatorFlags } from "../flags/flag-types.js";
import { TenantHold } from "../flags/tenant-hold.js";
import type { CheckpointJob } from "../governance/checkpoint-job.js";
import { runPeriodically } from "./periodic-job.js";
import { Sweeps, type SweepJob } from "./sweeps.js";
import type { HeldReleases } from "./held-releases.js";

export { COORDINATOR_GROUP } from "./inbox-intake.js";
import { COORDINATOR_GROUP } from "./inbox-intake.js";

export interface CoordinatorOptions {
  pool: Pool;
  /**
   * Its storage besides the engine's: shard leases, what the sweeps read, the inbox's tenancy check
   * (`runtime.stores.coordinator`; Postgres: store/coordinator/postgres-coordinator-store.ts).
   */
  store: CoordinatorStore;
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
  /**
   * Where a tenant hold finds the tenants with tasks in flight, whose messages an earlier owner may have held
   * (`runtime.stores.flags`). Required with `flags`.
   */
  flagStore?: Pick<FlagStore, "tenantsInFlight">;
  /** Runs at the end of every sweep with its time, instead of `sweepJobs` (tests). @defaultValue runs the sweep jobs */
  onSweep?: (now: number) => Promise<unknown>;
  /**
   * Jobs run at the end of every sweep while the bus is on, given this coordinator's fenced engine and what it
   * serves (sweeps.ts). The composition roots hand in approval expiry (src/approvals/expiry.ts). @defaultValue none
   */
  sweepJobs?: readonly SweepJob[];
  /**
   * Signs audit chain heads periodically (src/governance/checkpoint-job.ts), handed in by the composition roots
   * (`coordinatorOptionsFrom` gives every coordinator the default job); `false` or none: no signing here.
   */
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
   * Lets held steps go (issue 15): inline in the batch that freed a slot, and in a loop beside the inbox, for the
   * tenants this coordinator owns. The composition roots hand in src/fairness/releaser.ts `heldStepReleases(limits, store)`.
   * @defaultValue no releaser (held steps wait)
   */
  releases?: HeldReleases;
}

export class Coordinator {
  private readonly logger: Logger;
  private readonly health: DependencyHealth;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  private readonly clock: () => number;
  /** Holds and later applies the inbox messages of tenants switched off (only with flags). */
  private readonly hold: TenantHold<AppliedBatch> | undefined;
  /** Authenticates, decodes, holds or refuses, and applies inbox entries. */
  private readonly intake: InboxIntake;
  /** The shards this coordinator owns (leases in Postgres). */
  readonly ownership: ShardOwnership;
  /** The engine, fenced: every transaction proves the leases of its tenants' shards. */
  private readonly engine: Engine;
  private readonly reader: InboxReader;
  /** Reads, applies, acknowledges and publishes inbox batches. */
  private readonly inbox: InboxLoop;
  /** Due steps, stranded repair, outbox relay, approval expiry and trimming. */
  private readonly sweeps: Sweeps;
  /** Lets held steps go (with limits only). */
  private readonly releases: { run(signal: AbortSignal): Promise<void> } | undefined;
  constructor(private readonly options: CoordinatorOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "coordinator", consumer: options.consumer });
    this.clock = options.clock ?? Date.now;
    this.health = options.health ?? new DependencyHealth({ logger: this.logger });
    const shards = options.shards ?? { count: DEFAULT_SHARD_COUNT, leaseTtlMs: 5_000 };
    this.ownership = new ShardOwnership({
      pool: options.pool,
      store: options.store.shards,
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
        await this.inbox.settled();
      },
      onLost: (lost) => options.metrics?.shardMoves.inc({ event: "lost" }, lost.length),
      onChange: (owned) => {
        options.metrics?.shardOwned.reset();
        for (const shard of owned) options.metrics?.shardOwned.set({ shard: String(shard) }, 1);
      },
    });
    const serves = (orgId: string): boolean => this.ownership.ownsTenant(orgId) && this.tenantOn(orgId);
    this.engine = options.engine.fenced(this.ownership, options.releases?.inline({ serves, clock: this.clock, metrics: options.metrics }));
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
    this.releases = options.releases?.loop({
      engine: this.engine,
      pool: options.pool,
      logger: this.logger,
      serves,
      clock: this.clock,
      metrics: options.metrics,
      publish: async (rows) => {
        this.sweeps.published(rows);
        if (this.busOn()) await this.options.publisher.publish(rows);
      },
    });
    this.hold = options.flags
      ? new TenantHold<AppliedBatch>({
          bus: options.bus,
          flags: options.flags,
          store: options.flagStore ?? missingFlagStore(),
          consumer: options.consumer,
          reclaimIdleMs: options.reclaimIdleMs,
          batchSize: options.batchSize,
          group: COORDINATOR_GROUP,
          logger: this.logger,
          apply: (entries) => this.applyBatch(entries),
          publish: async (applied) => {
            this.sweeps.published(applied.outbox);
            await this.options.publisher.publish(applied.outbox);
          },
          running: () => !this.stopped,
          serves: (orgId) => this.ownership.ownsTenant(orgId),
        })
      : undefined;
    const busOn = (): boolean => this.busOn();
    const tenantOn = (orgId: string): boolean => this.tenantOn(orgId);
    this.sweeps = new Sweeps({ ...options, jobs: options.sweepJobs, engine: this.engine, ownership: this.ownership, health: this.health, logger: this.logger, clock: this.clock, hold: this.hold, busOn, tenantOn });
    this.inbox = new InboxLoop({
      ...options,
      reader: this.reader,
      apply: (entries) => this.applyBatch(entries),
      busOn,
      busBack: (at) => this.sweeps.busBack(at),
      inboxDrained: (at) => this.sweeps.inboxDrained(at),
      health: this.health,
      logger: this.logger,
      clock: this.clock,
      signal: this.abort.signal,
    });
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
      this.sweeps.busBack(this.clock());
      const { checkpoints } = this.options;
      const jobs = [...(checkpoints ? [{ name: "checkpoints", ...checkpoints }] : []), ...(this.options.background ?? [])];
      await Promise.all([
        this.ownership.run(this.abort.signal),
        this.inbox.run(),
        this.periodic("sweep", this.options.sweepIntervalMs, () => this.sweeps.sweepOnce()),
        this.periodic("trim", 10_000, () => this.sweeps.trimOnce()),
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

  private busOn(): boolean {
    return this.options.flags?.busEnabled() ?? true;
  }

  private tenantOn(orgId: string): boolean {
    return this.options.flags?.coordinatorEnabled(orgId) ?? true;
  }

  /** Applies one batch, acknowledges and publishes it. Exposed for tests and benchmarks that drive the coordinator step by step. */
  async processBatch(entries: readonly BusEntry[]): Promise<void> {
    // Driven without start(): the shards are taken (and kept) here, as the ownership loop would.
    if (!this.running) await this.ownership.refresh();
    await this.inbox.processBatch(entries);
  }

  /** See Sweeps.sweepOnce: fires due steps, repairs stranded ones, relays stale outbox rows, expires approvals. */
  async sweepOnce(): Promise<number> {
    // Driven without start() (tests): the shards are taken (and kept) here, as the ownership loop would.
    if (!this.running) await this.ownership.refresh();
    return this.sweeps.sweepOnce();
  }

  /** See InboxIntake.apply; the streams it published to are trimmed later. */
  private async applyBatch(entries: readonly BusEntry[]): Promise<AppliedBatch | undefined> {
    const applied = await this.intake.apply(entries);
    this.sweeps.published(applied?.outbox ?? []);
    return applied;
  }

  private periodic(name: string, intervalMs: number, run: () => Promise<unknown>, options: { immediately?: boolean } = {}): Promise<void> {
    return runPeriodically({ name, intervalMs, run, ...options, signal: this.abort.signal, health: this.health, logger: this.logger });
  }
}

function missingFlagStore(): never {
  throw new SwitchyardError(ErrorCode.Config, "a coordinator given flags needs flagStore (runtime.stores.flags) to find the tenants its hold may release");
}
