/**
 * Envelope claims: which stream entry took an envelope, so a harness never runs two copies of one envelope.
 *
 * One envelope can be on a stream as two entries: the outbox publishes a row on its fast path without a lock
 * while the stale-row sweep may take the same row, and a coordinator killed between publishing and deleting its
 * rows leaves them to be published again. Each copy would run the same turn, possibly at the same time. Before a
 * harness runs an entry it claims the envelope id with `SET key <entryId> NX GET PX ttl` (one command: claim and
 * the previous holder in one atomic step; Redis >= 7.0), pipelined for a whole read.
 */
import type { RedisClient } from "./redis-connection.js";
import type { BusEntry } from "./bus.js";
import type { Envelope } from "./codec.js";
import { recordTurnMarks } from "./turn-marks.js";

/**
 * How long a claim is kept. It must outlast the time a duplicate can take to appear: the stale-outbox sweep
 * republishes after SWITCHYARD_OUTBOX_STALE_MS (2 s by default), a restarted coordinator at its first sweep, a
 * reclaim after SWITCHYARD_RECLAIM_IDLE_MS (30 s). Ten minutes covers those with room for a coordinator restart;
 * it is also what the keys cost — one key of ~150 bytes per turn run in the window, ~180 MB at 2,000 turns/s — so
 * not longer. A duplicate later than this runs; the coordinator then drops its outcome as stale.
 */
export const ENVELOPE_CLAIM_TTL_MS = 10 * 60 * 1000;

/**
 * `SET … NX GET` per entry, one pipeline; the previous holder of each claim (`null`: this call took it). With
 * `marks`, the same pipeline records the entries' turn marks (bus/turn-marks.ts): first deliveries only.
 */
export async function claimEnvelopes(
  redis: RedisClient,
  keyOf: (envelopeId: string) => string,
  entries: readonly BusEntry[],
  marks?: (envelope: Envelope) => string,
): Promise<Array<string | null>> {
  if (entries.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const entry of entries) pipeline.call("SET", [keyOf(entry.envelope.id), entry.id, "PX", ENVELOPE_CLAIM_TTL_MS, "NX", "GET"]);
  if (marks) recordTurnMarks(pipeline, marks, entries);
  const all = (await pipeline.exec()) ?? [];
  if (all.length < entries.length) throw new Error(`envelope claims: ${all.length} replies for ${entries.length} SETs`);
  // A mark that could not be written only weakens a later reclaim's check: the claims are what this call answers.
  const results = all.slice(0, entries.length);
  return results.map(([error, value]) => {
    if (error) throw error;
    return value === null || value === undefined ? null : String(value);
  });
}

/**
 * Deletes the claims of envelopes about to be published again on purpose (a dead-letter replay): the replayed entry
 * is a new entry of an envelope that may have been claimed by the entry that was dead-lettered, and would otherwise
 * be acknowledged as a duplicate without running. Bytes that do not decode hold no claim.
 */
export async function releaseEnvelopeClaims(redis: RedisClient, keyOf: (envelopeId: string) => string, envelopes: ReadonlyArray<Envelope | undefined>): Promise<void> {
  const keys = envelopes.flatMap((envelope) => (envelope ? [keyOf(envelope.id)] : []));
  if (keys.length > 0) await redis.del(...keys);
}
