/**
 * What the coordinator reads next: the inboxes of the shards it owns plus the shared inbox of releases before
 * shards (issue 11). Three sources, in this order:
 *
 * 1. shards just acquired: whatever their previous owner read and left unacknowledged is claimed at once (idle
 *    time 0), before anything newer of theirs — the previous owner is fenced, so it can no longer commit them;
 * 2. every half reclaim period: entries of these inboxes idle too long (a read whose batch failed);
 * 3. otherwise a blocking read over all of them.
 */
import { COORDINATOR_STREAM, type Bus, type BusEntry } from "../bus/bus.js";
import type { Metrics } from "../metrics/metrics.js";
import { COORDINATOR_GROUP } from "./inbox-intake.js";
import type { ShardOwnership } from "./shard-ownership.js";
import { shardInbox } from "../bus/shards.js";

/** Blocking reads are cut this short: shards acquired meanwhile are read from the next read on. */
const READ_BLOCK_CAP_MS = 500;

export interface InboxReaderOptions {
  bus: Bus;
  ownership: ShardOwnership;
  consumer: string;
  batchSize: number;
  blockMs: number;
  reclaimIdleMs: number;
  metrics?: Metrics;
  clock: () => number;
  signal: AbortSignal;
}

export class InboxReader {
  /**
   * Shards just acquired, with when (wall clock, not the injected one): their entries idle since before then are
   * the previous owner's leftovers.
   */
  private readonly takeOvers: Array<{ shard: number; at: number }> = [];
  private lastReclaim = 0;

  constructor(private readonly options: InboxReaderOptions) {}

  /** Streams read now: the shared inbox, then the owned shards' inboxes. */
  streams(): string[] {
    return [COORDINATOR_STREAM, ...this.options.ownership.inboxes()];
  }

  /** Shards just acquired: their leftovers are claimed before the next read. */
  async acquired(shards: readonly number[]): Promise<void> {
    for (const shard of shards) await this.options.bus.ensureGroup(shardInbox(shard), COORDINATOR_GROUP);
    const at = Date.now();
    this.takeOvers.push(...shards.map((shard) => ({ shard, at })));
  }

  async next(): Promise<BusEntry[]> {
    const taken = await this.claimLeftovers();
    if (taken.length > 0) return taken;
    if (this.options.clock() - this.lastReclaim >= this.options.reclaimIdleMs / 2) {
      this.lastReclaim = this.options.clock();
      const reclaimed = await this.reclaim(this.options.reclaimIdleMs);
      if (reclaimed.length > 0) return reclaimed;
    }
    return this.read(Math.min(this.options.blockMs, READ_BLOCK_CAP_MS));
  }

  /** New entries already waiting, without blocking. */
  topUp(count: number): Promise<BusEntry[]> {
    return this.options.bus.readMany({ streams: this.streams(), group: COORDINATOR_GROUP, consumer: this.options.consumer, count, blockMs: 0, signal: this.options.signal });
  }

  private async read(blockMs: number): Promise<BusEntry[]> {
    const { bus, consumer, batchSize, signal } = this.options;
    return bus.readMany({ streams: this.streams(), group: COORDINATOR_GROUP, consumer, count: batchSize, blockMs, signal });
  }

  private async claimLeftovers(): Promise<BusEntry[]> {
    const owned = new Set(this.options.ownership.owned());
    while (this.takeOvers.length > 0) {
      const { shard, at } = this.takeOvers[0]!;
      if (!owned.has(shard)) {
        this.takeOvers.shift();
        continue;
      }
      // Only entries idle since before the acquisition: what this loop claimed a moment ago (idle time reset, still
      // being applied by the batch before) is not claimed a second time.
      const entries = await this.reclaimStream(shardInbox(shard), Math.max(0, Date.now() - at), this.options.batchSize);
      if (entries.length > 0) return entries;
      this.takeOvers.shift();
    }
    return [];
  }

  private async reclaim(minIdleMs: number): Promise<BusEntry[]> {
    const found: BusEntry[] = [];
    for (const stream of this.streams()) {
      if (found.length >= this.options.batchSize || this.options.signal.aborted) break;
      found.push(...(await this.reclaimStream(stream, minIdleMs, this.options.batchSize - found.length)));
    }
    return found;
  }

  private async reclaimStream(stream: string, minIdleMs: number, count: number): Promise<BusEntry[]> {
    const { bus, consumer, metrics } = this.options;
    const entries = await bus.reclaim({ stream, group: COORDINATOR_GROUP, consumer, minIdleMs, count });
    if (entries.length > 0) metrics?.reclaims.inc({ stream }, entries.length);
    return entries;
  }
}
