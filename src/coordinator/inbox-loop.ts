/**
 * The coordinator's inbox loop: reads its shard inboxes in batches, applies each batch (one transaction), then
 * acknowledges and publishes it, overlapping those round trips with the next batch. Pauses while BUS_ENABLED is
 * off; a batch that failed in an outage is applied again before anything else is read.
 */
import type { Bus, BusEntry } from "../bus/bus.js";
import { outageBackoffMs, type DependencyHealth } from "../process/dependency-health.js";
import { ErrorCode, isSwitchyardError } from "../errors.js";
import type { Logger } from "../logger.js";
import { sleep } from "../sleep.js";
import { COORDINATOR_GROUP, type AppliedBatch } from "./inbox-intake.js";
import type { InboxReader } from "./inbox-reader.js";
import type { OutboxPublisher } from "./outbox-publisher.js";

/** How often a paused coordinator (BUS_ENABLED off) looks at the flag again. */
const PAUSE_CHECK_MS = 200;

export interface InboxLoopOptions {
  reader: InboxReader;
  bus: Bus;
  publisher: OutboxPublisher;
  batchSize: number;
  /** Applies a batch (InboxIntake.apply); `undefined` when nothing of it is left to acknowledge or publish. */
  apply: (entries: readonly BusEntry[]) => Promise<AppliedBatch | undefined>;
  busOn: () => boolean;
  /** Told when BUS_ENABLED is on again after a pause, and when a read came back short (the backlog was read). */
  busBack: (at: number) => void;
  inboxDrained: (at: number) => void;
  health: DependencyHealth;
  logger: Logger;
  clock: () => number;
  signal: AbortSignal;
}

export class InboxLoop {
  /** The acknowledgement and publish of the last committed batch, running while the next batch is applied. */
  private finishing: Promise<void> = Promise.resolve();
  /** The batch being applied now (awaited before a shard is handed over). */
  private applying: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: InboxLoopOptions) {}

  private get stopped(): boolean {
    return this.options.signal.aborted;
  }

  /** Resolves once the batch being applied, and the acknowledgement and publish of the last one, are done. */
  async settled(): Promise<void> {
    await this.applying.catch(() => {});
    await this.finishing;
  }

  /**
   * Reads, applies and acknowledges batches one after another (so per-stream order is kept within this process),
   * with two overlaps that keep the transaction's round trips off the critical path: the next batch is read while
   * the current one is applied, and a committed batch is acknowledged and published while the next is applied.
   * At most one batch waits to be published, so a slow bus holds the loop back instead of queueing rows in memory.
   */
  async run(): Promise<void> {
    const { reader, health, logger, signal } = this.options;
    let readAhead: Promise<BusEntry[]> | undefined;
    const next = (): Promise<BusEntry[]> => reader.next();
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
          if (!readAhead && !this.options.busOn()) {
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
          if (!this.stopped && this.options.busOn()) {
            readAhead = next();
            // Awaited on the next turn of the loop; until then a failed read must not count as unhandled.
            readAhead.catch(() => {});
          }
        }
        const applying = this.options.apply(entries);
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
          logger.warn({ err: error }, "batch fenced off: a shard of it has a new owner; its entries are left to that owner");
          continue;
        }
        if (health.absorb(error)) {
          retrying = entries;
          logger.debug({ err: error }, "coordinator inbox loop failed in an outage; backing off");
          await sleep(outageBackoffMs(failures), signal);
        } else {
          logger.error({ err: error }, "coordinator inbox loop failed; retrying");
          await sleep(500, signal);
        }
      }
    }
    // Entries a read handed us just before the stop are ours (pending under this consumer): apply them now
    // rather than leave them to a reclaim much later.
    const leftover = await readAhead?.catch(() => []);
    if (leftover && leftover.length > 0) {
      try {
        const applied = await this.options.apply(leftover);
        if (applied) await this.finishInBackground(applied);
      } catch (error) {
        logger.error({ err: error }, "coordinator could not apply its last batch; it will be reclaimed");
      }
    }
    await this.finishing;
  }

  /** Applies one batch, acknowledges and publishes it, without the loop's overlaps. */
  async processBatch(entries: readonly BusEntry[]): Promise<void> {
    const applied = await this.options.apply(entries);
    if (!applied) return;
    await this.ack(applied);
    if (this.options.busOn()) await this.options.publisher.publish(applied.outbox);
  }

  /**
   * The entries of a read. A read-ahead returns as soon as the first entries arrive, early in the previous apply;
   * what arrived during the rest of it joins this batch now (one non-blocking read) rather than making a batch of
   * its own.
   */
  private async nextBatch(pending: Promise<BusEntry[]>, readEarly: boolean): Promise<BusEntry[]> {
    const { batchSize } = this.options;
    let entries = await pending;
    if (readEarly && entries.length > 0 && entries.length < batchSize && !this.stopped && this.options.busOn()) {
      // The top-up only saves a round: if it fails, the entries already read (ours, pending) are applied alone
      // rather than dropped until a reclaim; whatever the failure was shows again on the next read.
      const more = await this.options.reader.topUp(batchSize - entries.length).catch((error: unknown) => {
        this.options.logger.debug({ err: error }, "topping up the inbox batch failed; applying what was read");
        return [];
      });
      entries = entries.concat(more);
    }
    if (entries.length < batchSize) this.options.inboxDrained(this.options.clock());
    return entries;
  }

  /** BUS_ENABLED is off: read nothing until it is on again. */
  private async pauseWhileBusOff(): Promise<void> {
    const { logger, signal } = this.options;
    logger.info("BUS_ENABLED is off: not reading the inbox, publishing or sweeping until it is on again");
    while (!this.stopped && !this.options.busOn()) await sleep(PAUSE_CHECK_MS, signal);
    if (this.stopped) return;
    this.options.busBack(this.options.clock());
    logger.info("BUS_ENABLED is on: reading the inbox again");
  }

  /**
   * Waits for the previous batch's acknowledgement and publish (keeping publish order = commit order), then starts
   * this batch's without waiting for it. A failed acknowledgement is logged: the entries are redelivered later and
   * the engine drops them as duplicates; a failed publish leaves the outbox rows to the relay sweep.
   */
  private async finishInBackground(applied: AppliedBatch): Promise<void> {
    await this.finishing;
    this.finishing = this.finish(applied).catch((error: unknown) => {
      if (this.options.health.absorb(error)) return;
      this.options.logger.warn({ err: error, entries: countAcks(applied) }, "acknowledging a committed batch failed; its entries will be redelivered and dropped as duplicates");
    });
  }

  private async finish(applied: AppliedBatch): Promise<void> {
    const acked = this.ack(applied);
    // Both go out in the same tick, so ioredis writes them back to back; the outbox publish never throws.
    // With the bus switched off meanwhile, the rows stay in the outbox for the relay once it is on again.
    const published = this.options.busOn() ? this.options.publisher.publish(applied.outbox) : Promise.resolve();
    await Promise.all([acked, published]);
  }

  private async ack(applied: AppliedBatch): Promise<void> {
    await Promise.all([...applied.acks].map(([stream, ids]) => this.options.bus.ack(stream, COORDINATOR_GROUP, ids)));
  }
}

function countAcks(applied: AppliedBatch): number {
  let n = 0;
  for (const ids of applied.acks.values()) n += ids.length;
  return n;
}
