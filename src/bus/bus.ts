/**
 * The bus port: what the coordinator and harness need from a stream transport. The Redis Streams adapter
 * (`redis-bus.ts`) is the only implementation; the port keeps decision code and tests honest about what they use.
 *
 * Stream names are logical (`role:writer`, `team:ops`, `coordinator`); the adapter maps them onto Redis keys
 * with the configured prefix and Cluster hash tags.
 */
import type { Envelope } from "./codec.js";

/** The coordinator's inbox: RESULT, QUERY and CONTROL envelopes. */
export const COORDINATOR_STREAM = "coordinator";

export interface BusEntry {
  /** The stream the entry was read from (logical name). */
  stream: string;
  /** Redis stream entry id. */
  id: string;
  envelope: Envelope;
  /** The bytes as read (what a MAC covers; what is moved to a hold or dead-letter stream unchanged). */
  raw: Uint8Array;
}

export interface ClaimOptions {
  /** Also record each entry's turn mark, in the same round trip (first deliveries; see `supersededTurns`). */
  recordTurns?: boolean;
}

export interface OutgoingEnvelope {
  /** Logical stream name, e.g. `role:writer`. */
  stream: string;
  envelope: Envelope;
}

/** Entries to acknowledge: their stream, consumer group and entry ids. */
export interface AckTarget {
  stream: string;
  group: string;
  ids: readonly string[];
}

export interface ReadOptions {
  stream: string;
  group: string;
  consumer: string;
  /** Maximum entries returned. */
  count: number;
  /** Block at most this long when nothing is waiting (ms); 0 returns at once. */
  blockMs: number;
  signal?: AbortSignal;
}

export interface ReadManyOptions extends Omit<ReadOptions, "stream"> {
  /** Read from all of these at once (at most `count` entries in all); a stream listed twice is read once. */
  streams: readonly string[];
}

export interface ReclaimOptions {
  stream: string;
  group: string;
  consumer: string;
  /** Only entries idle at least this long are taken over (ms). */
  minIdleMs: number;
  count: number;
}

export interface DeadLetter {
  /** Dead-letter stream entry id. */
  id: string;
  /** The stream the entry was on. */
  stream: string;
  /** The original entry id. */
  originalId: string;
  reason: string;
  deliveries: number;
  /** The raw bytes as they were on the stream (may not decode). */
  raw: Uint8Array;
  atMs: number;
}

export interface Bus {
  /** Publishes envelopes (pipelined). Validates each; an invalid one rejects the whole call before any write. */
  publish(items: readonly OutgoingEnvelope[]): Promise<void>;
  /** Publishes envelopes already encoded (and validated) by `encodeEnvelope`, e.g. outbox rows. */
  publishEncoded(items: ReadonlyArray<{ stream: string; data: Uint8Array }>): Promise<void>;
  /**
   * Publishes envelopes already encoded, then acknowledges entries of the stream they answer — a harness turn's
   * RESULT and its WORK. The acknowledgement happens only once every envelope is on its stream: when the call
   * rejects, the entries may still be pending (an at-least-once redelivery), never acknowledged with their
   * outcome lost. One round trip where the keys allow it (see the adapter).
   */
  publishAndAck(items: ReadonlyArray<{ stream: string; data: Uint8Array }>, ack: AckTarget): Promise<void>;
  /** Creates the consumer group (from the start of the stream) if it is missing. Idempotent. */
  ensureGroup(stream: string, group: string): Promise<void>;
  /**
   * Reads new entries for this consumer. Entries that fail to decode are moved to the dead-letter stream with
   * the reason and acknowledged; they are never returned. Recreates a group that vanished (e.g. Redis flushed).
   */
  read(options: ReadOptions): Promise<BusEntry[]>;
  /**
   * `read` over several streams of the same group (a coordinator's shard inboxes): returns once any of them has
   * entries, each entry naming its stream. Same dead-lettering and group recreation as `read`.
   */
  readMany(options: ReadManyOptions): Promise<BusEntry[]>;
  ack(stream: string, group: string, ids: readonly string[]): Promise<void>;
  /**
   * Takes over entries idle longer than `minIdleMs` (XAUTOCLAIM). Entries already delivered `maxDeliveries`
   * times go to the dead-letter stream instead of being returned.
   */
  reclaim(options: ReclaimOptions): Promise<BusEntry[]>;
  /** Resets an entry's idle time so it is not reclaimed while a worker is still on it. */
  touch(stream: string, group: string, consumer: string, ids: readonly string[]): Promise<void>;
  /**
   * Claims each entry's envelope id for that entry, unless another entry already holds it (for
   * `ENVELOPE_CLAIM_TTL_MS` after the claim). Returns, per entry and in order, the id of the entry that held the
   * claim before this call: `null` when this call took it, the entry's own id when it is a redelivery of the
   * entry that took it, another id when the entry is a second publication of an envelope already taken (the
   * outbox's fast path and its stale sweep racing, or a coordinator killed between publishing and deleting its
   * outbox rows). One round trip for the whole batch. Replaying a dead letter releases its envelope's claim.
   */
  claimEnvelopes(stream: string, entries: readonly BusEntry[], options?: ClaimOptions): Promise<Array<string | null>>;
  /**
   * Per entry, in order: whether a later turn of the entry's step has since been handed to this stream (its first
   * delivery recorded a turn mark, `ClaimOptions.recordTurns`). For reclaimed entries: true means the entry's turn
   * is over and must not run again. False when unknown (no mark, an envelope without `turn`).
   */
  supersededTurns(stream: string, entries: readonly BusEntry[]): Promise<boolean[]>;
  /** Moves one entry to the dead-letter stream with a reason and acknowledges it. */
  deadLetter(stream: string, group: string, entryId: string, raw: Uint8Array, reason: string): Promise<void>;
  listDeadLetters(stream: string, count?: number): Promise<DeadLetter[]>;
  /** Re-publishes dead letters onto their stream and removes them from the dead-letter stream. */
  replayDeadLetters(stream: string, ids: readonly string[]): Promise<number>;
  /** Trims the stream towards `maxLen`, never below the oldest entry any group has not acknowledged. */
  trim(stream: string, maxLen: number): Promise<number>;
  /** Stream length and pending (delivered, unacknowledged) count for a group. */
  stats(stream: string, group: string): Promise<{ length: number; pending: number; deadLetters: number }>;
  close(): Promise<void>;
}
