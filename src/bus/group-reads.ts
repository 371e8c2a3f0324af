/**
 * Reading a consumer group: one XREADGROUP over streams of one slot (`read`, and each slot of `readMany`), and
 * `readMany` over several streams (a coordinator's shard inboxes), which must also work on a Redis Cluster.
 *
 * A cluster refuses one command across slots, so `readMany` reads each slot's streams on their own (a single Redis
 * has one group of all). What is waiting is taken first, without blocking, slot by slot, at most `count` in all
 * (the `read-many-1` script); only when nothing waits does it block on every slot at once.
 */
import type { BusEntry } from "./bus.js";
import type { BlockingReads } from "./blocking-reads.js";
import { readManyScript } from "./lua/read-many.js";
import { runScript } from "./lua/script.js";
import type { RedisClient } from "./redis-connection.js";
import { hasErrorPrefix, streamsEntriesOf, type RawEntry } from "./redis-replies.js";
import { groupBySlot } from "./slots.js";
import type { Logger } from "../logger.js";

export interface GroupReadsDeps {
  redis: RedisClient;
  logger: Logger;
  blocking: BlockingReads;
  streamKeyOf(stream: string): string;
  ensureGroup(stream: string, group: string): Promise<void>;
  /** Decodes entries, dead-lettering the ones that do not decode. */
  decodeEntries(stream: string, group: string, entries: readonly RawEntry[]): Promise<BusEntry[]>;
}

export interface GroupReads {
  /** One XREADGROUP (blocking when blockMs > 0) over streams that share a slot (on a single Redis: any streams). */
  readStreams(streams: string[], group: string, consumer: string, count: number, blockMs: number, signal: AbortSignal | undefined, wake?: AbortSignal): Promise<BusEntry[]>;
  /** `Bus.readMany` for validated arguments and distinct streams. */
  readMany(streams: string[], group: string, consumer: string, count: number, blockMs: number, signal: AbortSignal | undefined): Promise<BusEntry[]>;
}

export function createGroupReads(deps: GroupReadsDeps): GroupReads {
  const { redis, logger, blocking, streamKeyOf, ensureGroup, decodeEntries } = deps;
  /** Rotates which stream `readMany` looks at first, so a busy one cannot starve the rest. */
  let readManyTurn = 0;

  /** Entries waiting on streams of one slot, at most `count` in all (one script); missing groups are recreated. */
  async function takeWaiting(streams: string[], group: string, consumer: string, count: number, first: number): Promise<BusEntry[]> {
    const keyToStream = new Map(streams.map((stream) => [streamKeyOf(stream), stream]));
    const reply = await runScript(redis, readManyScript, [...keyToStream.keys()], [group, consumer, count, first], true);
    const [read, missing] = reply as [unknown, Buffer[]];
    if (missing.length > 0) {
      const gone = missing.map((key) => keyToStream.get(key.toString()) ?? key.toString());
      logger.warn({ streams: gone, group }, "consumer group missing (Redis flushed or key deleted?); recreating them");
      for (const stream of gone) await ensureGroup(stream, group);
    }
    const decoded = await Promise.all(streamsEntriesOf(read).map(([key, entries]) => decodeEntries(keyToStream.get(key) ?? key, group, entries)));
    return decoded.flat();
  }

  /** One XREADGROUP (blocking when blockMs > 0) over streams that share a slot (on a single Redis: any streams). */
  async function readStreams(
    streams: string[],
    group: string,
    consumer: string,
    count: number,
    blockMs: number,
    signal: AbortSignal | undefined,
    wake?: AbortSignal,
  ): Promise<BusEntry[]> {
    const keyToStream = new Map(streams.map((stream) => [streamKeyOf(stream), stream]));
    const keys = [...keyToStream.keys()];
    const args = ["GROUP", group, consumer, "COUNT", count, ...(blockMs > 0 ? ["BLOCK", blockMs] : []), "STREAMS", ...keys, ...keys.map(() => ">")];
    let reply: unknown;
    try {
      reply = await blocking.xreadgroup(args, blockMs, signal, wake);
    } catch (error) {
      // NOGROUP: the group (or the whole key) is gone. UNBLOCKED: Redis >= 7 ends a read that was blocked when its
      // stream key was deleted (FLUSHDB, DEL, a restart without data) with this error instead of NOGROUP. Both mean
      // the same thing: recreate the groups (from 0, so entries added since are delivered; all of them, since the
      // reply does not say which) and read on.
      if (!hasErrorPrefix(error, "NOGROUP") && !hasErrorPrefix(error, "UNBLOCKED")) throw error;
      logger.warn({ streams, group }, "consumer group missing (Redis flushed or key deleted?); recreating it");
      for (const stream of streams) await ensureGroup(stream, group);
      reply = await blocking.xreadgroup(args, blockMs, signal, wake);
    }
    if (reply === undefined) return [];
    const read = await Promise.all(streamsEntriesOf(reply).map(([key, entries]) => decodeEntries(keyToStream.get(key) ?? key, group, entries)));
    return read.flat();
  }

  async function readMany(unique: string[], group: string, consumer: string, count: number, blockMs: number, signal: AbortSignal | undefined): Promise<BusEntry[]> {
    const slots = groupBySlot(redis, unique, (stream) => streamKeyOf(stream));
    const start = readManyTurn++;
    const ready: BusEntry[] = [];
    for (let i = 0; i < slots.length && ready.length < count; i++) {
      ready.push(...(await takeWaiting(slots[(start + i) % slots.length]!, group, consumer, count - ready.length, start)));
    }
    if (ready.length > 0 || blockMs === 0 || signal?.aborted) return ready;
    // Nothing waiting: block on every slot at once, each stream taking a share of the count. The first read
    // with entries wakes the others (they end as if timed out) and all are awaited, so what any of them took
    // is handed out, not left pending.
    const share = Math.max(1, Math.floor(count / unique.length));
    const wake = slots.length > 1 ? new AbortController() : undefined;
    const reads = slots.map(async (slotStreams) => {
      const entries = await readStreams(slotStreams, group, consumer, share, blockMs, signal, wake?.signal);
      if (entries.length > 0) wake?.abort();
      return entries;
    });
    return (await Promise.all(reads)).flat();
  }

  return { readStreams, readMany };
}
