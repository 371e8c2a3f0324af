/**
 * Dead letters as operators see them (admin API and `switchyard dlq`): which streams have them, what each one was,
 * and replaying them.
 */
import type { RedisClient } from "./redis-connection.js";
import type { Bus, DeadLetter } from "./bus.js";
import { decodeEnvelope, EnvelopeKind } from "./codec.js";
import { discoverStreams } from "./stream-discovery.js";

export interface DeadLetterView {
  stream: string;
  id: string;
  originalId: string;
  reason: string;
  deliveries: number;
  atMs: number;
  bytes: number;
  /** The envelope's identity when the bytes still decode, else null. */
  envelope: { id: string; kind: string; orgId: string; taskId: string; stepId: string } | null;
}

/** Logical stream names that have a dead-letter stream under `prefix`. */
export function findDeadLetterStreams(redis: RedisClient, prefix: string): Promise<string[]> {
  return discoverStreams(redis, prefix, { deadLetters: true });
}

export function deadLetterView(letter: DeadLetter, maxPayloadBytes: number): DeadLetterView {
  let envelope: DeadLetterView["envelope"] = null;
  try {
    const decoded = decodeEnvelope(letter.raw, maxPayloadBytes);
    envelope = { id: decoded.id, kind: EnvelopeKind[decoded.kind] ?? String(decoded.kind), orgId: decoded.orgId, taskId: decoded.taskId, stepId: decoded.stepId };
  } catch {
    // Undecodable bytes are a normal reason to be dead-lettered; the view still lists them.
  }
  return {
    stream: letter.stream,
    id: letter.id,
    originalId: letter.originalId,
    reason: letter.reason,
    deliveries: letter.deliveries,
    atMs: letter.atMs,
    bytes: letter.raw.byteLength,
    envelope,
  };
}

/** Replays every dead letter of a stream, a page at a time. */
export async function replayAllDeadLetters(bus: Bus, stream: string): Promise<number> {
  let total = 0;
  for (;;) {
    const page = await bus.listDeadLetters(stream, 1000);
    if (page.length === 0) return total;
    const replayed = await bus.replayDeadLetters(stream, page.map((l) => l.id));
    total += replayed;
    // Nothing moved (entries vanished concurrently): stop rather than spin.
    if (replayed === 0) return total;
  }
}
