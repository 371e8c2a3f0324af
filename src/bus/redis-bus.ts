/**
 * The Redis Streams adapter of the bus port (`bus.ts`).
 *
 * - One stream per logical destination; each entry holds the protobuf envelope in one binary field (`e`). Every
 *   command that returns entry data uses the Buffer variant so bytes survive untouched.
 * - Reads of a consumer group are `group-reads.ts`; blocking ones run on dedicated connections (`blocking-reads.ts`).
 * - The connection may be a Redis Cluster: every multi-key command and pipeline stays within one slot (a stream's
 *   keys share its hash tag; publishes and `readMany` to several streams are split by slot, see `slots.ts`).
 * - A read that is aborted returns `[]` rather than throwing, so consumer loops simply check `signal.aborted`.
 * - Dead-lettering, reclaim, heartbeats, replay and trim are Lua scripts (`lua/`), each atomic and Cluster-safe
 *   (a stream and its dead-letter stream share one hash tag).
 * - `publishAndAck` (a harness turn's RESULT + XACK) is one Lua script on a single Redis: one round trip, and no
 *   XACK after a failed XADD. On a Cluster the two keys sit in different slots, so it falls back to the XADD and
 *   then the XACK, each awaited.
 * - Dead-lettering acknowledges the entry but does not XDEL it: other groups on the same stream may still need it;
 *   trim removes it once every group is done.
 */
import type { RedisClient } from "./redis-connection.js";
import type { Bus, BusEntry, OutgoingEnvelope, ReadOptions, ReclaimOptions } from "./bus.js";
import { decodeEnvelope, encodeEnvelope, type Envelope } from "./codec.js";
import { createBlockingReads } from "./blocking-reads.js";
import { createGroupReads } from "./group-reads.js";
import { claimEnvelopes, releaseEnvelopeClaims } from "./envelope-claims.js";
import { assertEntryId, assertGroupName, assertKeyPrefix, deadLetterKey, envelopeClaimKey, streamKey, turnMarkKey } from "./keys.js";
import { supersededTurns } from "./turn-marks.js";
import { deadLetterScript } from "./lua/dead-letter.js";
import { ENVELOPE_FIELD } from "./lua/fields.js";
import { reclaimScript } from "./lua/reclaim.js";
import { replayScript } from "./lua/replay.js";
import { runScript, type LuaScript, type ScriptArg } from "./lua/script.js";
import { touchScript } from "./lua/touch.js";
import { groupBySlot } from "./slots.js";
import { trimScript } from "./lua/trim.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import {
  assertNonNegativeInteger,
  assertPositiveInteger,
  fieldValue,
  hasErrorPrefix,
  parseDeadLetter,
  toBuffer,
  type RawEntry,
} from "./redis-replies.js";
import type { Metrics } from "../metrics/metrics.js";
import { createStreamWrites } from "./stream-writes.js";

export interface RedisBusOptions {
  /** The command connection. Owned by the caller unless `ownsConnection`. Must not use ioredis' `keyPrefix`. */
  redis: RedisClient;
  /** Prepended to every key, e.g. `switchyard:`. No braces. */
  keyPrefix: string;
  /** Largest envelope payload accepted at publish and at read. */
  maxPayloadBytes: number;
  /** Reclaim dead-letters an entry once Redis has delivered it more than this many times. */
  maxDeliveries: number;
  /** Close `redis` in `close()`. @defaultValue false */
  ownsConnection?: boolean;
  /** @defaultValue silent */
  logger?: Logger;
  /** Counts the entries the bus itself dead-letters (undecodable, or over `maxDeliveries`). */
  metrics?: Pick<Metrics, "deadLetters">;
}

/** Room for the non-payload fields of an envelope; a raw entry larger than payload limit + this is not decoded. */
const ENVELOPE_OVERHEAD_BYTES = 64 * 1024;
/** XAUTOCLAIM scans at most COUNT×10 PEL entries per call; this bounds the calls one reclaim() makes. */
const MAX_RECLAIM_ROUNDS = 16;
const DEFAULT_DEAD_LETTER_PAGE = 100;
const ENVELOPE_FIELD_BYTES = Buffer.from(ENVELOPE_FIELD);


export function createRedisBus(options: RedisBusOptions): Bus {
  assertKeyPrefix(options.keyPrefix);
  assertPositiveInteger(options.maxPayloadBytes, "maxPayloadBytes");
  assertPositiveInteger(options.maxDeliveries, "maxDeliveries");
  const { redis, keyPrefix, maxPayloadBytes, maxDeliveries } = options;
  const logger = (options.logger ?? silentLogger).child({ component: "bus" });
  const writes = createStreamWrites(redis, logger);
  const keyCache = new Map<string, { stream: string; dead: string }>();
  const blocking = createBlockingReads(redis, logger);
  let closing: Promise<void> | undefined;

  function keysOf(stream: string): { stream: string; dead: string } {
    let keys = keyCache.get(stream);
    if (!keys) {
      keys = { stream: streamKey(keyPrefix, stream), dead: deadLetterKey(keyPrefix, stream) };
      keyCache.set(stream, keys);
    }
    return keys;
  }

  function assertOpen(): void {
    if (closing) throw new SwitchyardError(ErrorCode.FailedPrecondition, "the bus is closed");
  }

  async function guard<T>(operation: string, work: () => Promise<T>): Promise<T> {
    assertOpen();
    try {
      return await work();
    } catch (error) {
      if (error instanceof SwitchyardError) throw error;
      throw new SwitchyardError(ErrorCode.Unavailable, `bus ${operation} failed: ${(error as Error).message ?? String(error)}`, { cause: error });
    }
  }

  function script(definition: LuaScript, keys: string[], args: ScriptArg[], buffers = false): Promise<unknown> {
    return runScript(redis, definition, keys, args, buffers);
  }

  async function ensureGroup(stream: string, group: string): Promise<void> {
    assertGroupName(group);
    try {
      await redis.xgroup("CREATE", keysOf(stream).stream, group, "0", "MKSTREAM");
    } catch (error) {
      if (!hasErrorPrefix(error, "BUSYGROUP")) throw error;
    }
  }

  /** `counted` is the metric's reason label when the bus itself decided (callers of `deadLetter` count their own). */
  async function moveToDeadLetters(stream: string, group: string, id: string, raw: Uint8Array, reason: string, counted?: string): Promise<boolean> {
    const keys = keysOf(stream);
    const moved = await script(deadLetterScript, [keys.stream, keys.dead], [group, id, stream, reason, toBuffer(raw), Date.now()]);
    if (moved === 1 && counted) options.metrics?.deadLetters.inc({ stream, reason: counted });
    if (moved === 1) logger.warn({ stream, group, entryId: id, reason }, "bus entry moved to dead letters");
    else logger.warn({ stream, group, entryId: id, reason }, "bus entry not pending in group; not dead-lettered");
    return moved === 1;
  }

  /** Decodes entries; the ones that do not decode are dead-lettered (and acked) instead of returned. */
  async function decodeEntries(stream: string, group: string, entries: readonly RawEntry[]): Promise<BusEntry[]> {
    const decoded: BusEntry[] = [];
    const rejected: Promise<boolean>[] = [];
    for (const [idBytes, fields] of entries) {
      const id = idBytes.toString();
      if (!fields) continue;
      const raw = fieldValue(fields, ENVELOPE_FIELD_BYTES);
      const outcome = decodeRaw(raw);
      if (typeof outcome === "string") rejected.push(moveToDeadLetters(stream, group, id, raw ?? new Uint8Array(), outcome, "MALFORMED_ENVELOPE"));
      else decoded.push({ stream, id, envelope: outcome, raw: new Uint8Array(raw!.buffer, raw!.byteOffset, raw!.byteLength) });
    }
    await Promise.all(rejected);
    return decoded;
  }

  /** The envelope, or the reason it cannot be one. */
  function decodeRaw(raw: Buffer | undefined): Envelope | string {
    if (!raw) return `entry has no "${ENVELOPE_FIELD}" field`;
    if (raw.byteLength > maxPayloadBytes + ENVELOPE_OVERHEAD_BYTES) {
      return `entry is ${raw.byteLength} bytes, over the ${maxPayloadBytes + ENVELOPE_OVERHEAD_BYTES}-byte envelope limit`;
    }
    try {
      // A plain view, so bytes fields decode as Uint8Array (not Buffer) and compare equal to what was published.
      return decodeEnvelope(new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength), maxPayloadBytes);
    } catch (error) {
      return error instanceof SwitchyardError ? `${error.code}: ${error.message}` : String(error);
    }
  }

  const reads = createGroupReads({ redis, logger, blocking, streamKeyOf: (stream) => keysOf(stream).stream, ensureGroup, decodeEntries });

  const bus: Bus = {
    publish: (items) => guard("publish", () => writes.append(items.map(encodeItem))),
    // Outbox rows were validated and encoded when they were written; re-encoding them would only burn CPU.
    publishEncoded: (items) => guard("publish", () => writes.append(items.map((i) => [keysOf(i.stream).stream, toBuffer(i.data)]))),

    ensureGroup: (stream, group) => guard("ensureGroup", () => ensureGroup(stream, group)),

    read: ({ stream, group, consumer, count, blockMs, signal }) =>
      guard("read", async () => {
        keysOf(stream);
        assertGroupName(group);
        assertGroupName(consumer, "consumer");
        assertPositiveInteger(count, "count");
        assertNonNegativeInteger(blockMs, "blockMs");
        if (signal?.aborted) return [];
        return reads.readStreams([stream], group, consumer, count, blockMs, signal);
      }),

    readMany: ({ streams, group, consumer, count, blockMs, signal }) =>
      guard("read", async () => {
        const unique = [...new Set(streams)];
        if (unique.length === 0) return [];
        unique.forEach((stream) => keysOf(stream));
        assertGroupName(group);
        assertGroupName(consumer, "consumer");
        assertPositiveInteger(count, "count");
        assertNonNegativeInteger(blockMs, "blockMs");
        if (signal?.aborted) return [];
        return reads.readMany(unique, group, consumer, count, blockMs, signal);
      }),

    publishAndAck: (items, target) =>
      guard("publishAndAck", async () => {
        const key = keysOf(target.stream).stream;
        assertGroupName(target.group);
        target.ids.forEach(assertEntryId);
        await writes.appendThenAcknowledge(items.map((i) => [keysOf(i.stream).stream, toBuffer(i.data)]), { ...target, key });
      }),

    ack: (stream, group, ids) =>
      guard("ack", async () => {
        const key = keysOf(stream).stream;
        assertGroupName(group);
        ids.forEach(assertEntryId);
        await writes.acknowledge({ stream, key, group, ids });
      }),

    reclaim: ({ stream, group, consumer, minIdleMs, count }) =>
      guard("reclaim", async () => {
        const keys = keysOf(stream);
        assertGroupName(group);
        assertGroupName(consumer, "consumer");
        assertNonNegativeInteger(minIdleMs, "minIdleMs");
        assertPositiveInteger(count, "count");
        const reclaimed: BusEntry[] = [];
        let cursor = "0-0";
        for (let round = 0; round < MAX_RECLAIM_ROUNDS && reclaimed.length < count; round++) {
          let reply: unknown;
          try {
            const args = [group, consumer, minIdleMs, cursor, count - reclaimed.length, maxDeliveries, stream, Date.now()];
            reply = await script(reclaimScript, [keys.stream, keys.dead], args, true);
          } catch (error) {
            if (!hasErrorPrefix(error, "NOGROUP")) throw error;
            logger.warn({ stream, group }, "consumer group missing at reclaim; recreating it (nothing to reclaim)");
            await ensureGroup(stream, group);
            return reclaimed;
          }
          const [next, claimed, deadLettered, deleted] = reply as [Buffer, RawEntry[], number, number];
          if (deadLettered > 0) {
            logger.warn({ stream, group, count: deadLettered, maxDeliveries }, "bus entries over max deliveries moved to dead letters");
            options.metrics?.deadLetters.inc({ stream, reason: "MAX_DELIVERIES" }, deadLettered);
          }
          if (deleted > 0) logger.info({ stream, group, count: deleted }, "pending bus entries were deleted from the stream; dropped");
          reclaimed.push(...(await decodeEntries(stream, group, claimed)));
          cursor = next.toString();
          if (cursor === "0-0") break;
        }
        if (reclaimed.length > 0) logger.info({ stream, group, consumer, count: reclaimed.length }, "reclaimed idle bus entries");
        return reclaimed;
      }),

    touch: (stream, group, consumer, ids) =>
      guard("touch", async () => {
        const keys = keysOf(stream);
        assertGroupName(group);
        assertGroupName(consumer, "consumer");
        if (ids.length === 0) return;
        ids.forEach(assertEntryId);
        const touched = await script(touchScript, [keys.stream], [group, consumer, ...ids]);
        if (touched !== ids.length) logger.warn({ stream, group, consumer, touched, asked: ids.length }, "some entries are no longer owned by this consumer");
      }),

    claimEnvelopes: (stream, entries, options) =>
      guard("claimEnvelopes", () => {
        keysOf(stream);
        const marks = options?.recordTurns ? (envelope: Envelope) => turnMarkKey(keyPrefix, stream, envelope.taskId, envelope.stepId) : undefined;
        return claimEnvelopes(redis, (envelopeId) => envelopeClaimKey(keyPrefix, stream, envelopeId), entries, marks);
      }),

    supersededTurns: (stream, entries) =>
      guard("supersededTurns", () => {
        keysOf(stream);
        return supersededTurns(redis, (envelope) => turnMarkKey(keyPrefix, stream, envelope.taskId, envelope.stepId), entries);
      }),

    deadLetter: (stream, group, entryId, raw, reason) =>
      guard("deadLetter", async () => {
        keysOf(stream);
        assertGroupName(group);
        assertEntryId(entryId);
        await moveToDeadLetters(stream, group, entryId, raw, reason);
      }),

    listDeadLetters: (stream, count = DEFAULT_DEAD_LETTER_PAGE) =>
      guard("listDeadLetters", async () => {
        const keys = keysOf(stream);
        assertPositiveInteger(count, "count");
        const entries = await redis.xrangeBuffer(keys.dead, "-", "+", "COUNT", count);
        return entries.map(([id, fields]) => parseDeadLetter(stream, id.toString(), fields));
      }),

    replayDeadLetters: (stream, ids) =>
      guard("replayDeadLetters", async () => {
        const keys = keysOf(stream);
        if (ids.length === 0) return 0;
        ids.forEach(assertEntryId);
        // Released before the entries are back on the stream, so no harness can read one while its claim is held.
        await releaseEnvelopeClaims(redis, (envelopeId) => envelopeClaimKey(keyPrefix, stream, envelopeId), await deadEnvelopes(keys.dead, ids));
        const replayed = Number(await script(replayScript, [keys.stream, keys.dead], [...ids]));
        logger.info({ stream, replayed, asked: ids.length }, "dead letters replayed");
        return replayed;
      }),

    trim: (stream, maxLen) =>
      guard("trim", async () => {
        const keys = keysOf(stream);
        assertNonNegativeInteger(maxLen, "maxLen");
        return Number(await script(trimScript, [keys.stream], [maxLen]));
      }),

    stats: (stream, group) =>
      guard("stats", async () => {
        const keys = keysOf(stream);
        assertGroupName(group);
        const results = (await redis.pipeline().xlen(keys.stream).xpending(keys.stream, group).xlen(keys.dead).exec()) ?? [];
        const [length, pending, deadLetters] = results.map(([error, value], index) => {
          if (!error) return index === 1 ? Number((value as unknown[])[0] ?? 0) : Number(value);
          if (index === 1 && hasErrorPrefix(error, "NOGROUP")) return 0;
          throw error;
        });
        return { length: length ?? 0, pending: pending ?? 0, deadLetters: deadLetters ?? 0 };
      }),

    close: () => {
      closing ??= (async () => {
        blocking.close();
        if (options.ownsConnection) await redis.quit().catch(() => redis.disconnect());
      })();
      return closing;
    },
  };

  /** The envelopes of dead letters, by dead-letter id (`undefined` for an id not found or bytes that do not decode). */
  async function deadEnvelopes(deadKey: string, ids: readonly string[]): Promise<Array<Envelope | undefined>> {
    const pipeline = redis.pipeline();
    for (const id of ids) pipeline.xrangeBuffer(deadKey, id, id);
    const results = (await pipeline.exec()) ?? [];
    return results.map(([error, value]) => {
      if (error) throw error;
      const [found] = value as Array<[Buffer, Buffer[]]>;
      const decoded = found ? decodeRaw(Buffer.from(parseDeadLetter("", found[0].toString(), found[1]).raw)) : undefined;
      return typeof decoded === "string" ? undefined : decoded;
    });
  }

  function encodeItem(item: OutgoingEnvelope, index: number): [string, Buffer] {
    const key = keysOf(item.stream).stream;
    try {
      return [key, toBuffer(encodeEnvelope(item.envelope, maxPayloadBytes))];
    } catch (error) {
      const cause = SwitchyardError.from(error, ErrorCode.MalformedEnvelope);
      throw new SwitchyardError(cause.code, `${cause.message} (item ${index}, stream ${item.stream}); nothing was published`, {
        cause,
        details: { ...cause.details, index, stream: item.stream },
      });
    }
  }

  return bus;
}
