/**
 * Dead letters for the admin API: which streams have them, what each one was, and replaying them.
 * TODO(api): `switchyard dlq` (src/cli/commands/dlq.ts) has the same discovery and view; it could use this module.
 */
import type { Redis } from "ioredis";
import type { Bus, DeadLetter } from "../bus/bus.js";
import { decodeEnvelope, EnvelopeKind } from "../bus/codec.js";

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

/** Logical stream names that have a dead-letter stream under `prefix` (SCAN, never KEYS). */
export async function findDeadLetterStreams(redis: Redis, prefix: string): Promise<string[]> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, "\\$&")}{*}:dead`;
  const found = new Set<string>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      // Stream names contain no braces, so the hash tag is exactly the logical name.
      const match = /^\{([^{}]+)\}:dead$/.exec(key.slice(prefix.length));
      if (match) found.add(match[1]!);
    }
  } while (cursor !== "0");
  return [...found].sort();
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
