/**
 * Turn marks: the latest turn of each step a harness queue has been handed, kept in Redis beside the stream, so a
 * worker can tell an old turn from the current one without asking the coordinator's database (issue 27 §3).
 *
 * A reclaimed entry is a turn whose worker died before publishing its outcome (a harness publishes the outcome and
 * acknowledges the entry in one script, so a published turn is never left pending on a single Redis). It is still
 * the step's current turn unless the coordinator has moved on: timed the attempt out and dispatched the next one, or
 * — on a Cluster, where publish and acknowledgement are two commands — taken its outcome and sent the next REPLY.
 * Either way a newer WORK or REPLY for the step reached the same stream, and its first delivery left its
 * `(attempt, turn)` here. A reclaimed entry behind that mark is stale and is acknowledged without running; running it
 * would run two turns of one step at once (the coordinator would drop the outcome, but the side effects would be done).
 *
 * What a mark cannot see: a step the coordinator finished or cancelled without sending the queue anything more. Such
 * an entry runs, and the coordinator drops its outcome as stale, as it always has.
 */
import type { ChainableCommander } from "ioredis";
import type { RedisClient } from "./redis-connection.js";
import type { BusEntry } from "./bus.js";
import type { Envelope } from "./codec.js";

/**
 * How long a mark is kept. It must outlast the time a stale entry can wait for its reclaim: SWITCHYARD_RECLAIM_IDLE_MS
 * (30 s by default) while any worker of the queue lives. Five minutes leaves room for a queue with no live worker for
 * a while; a mark is ~120 bytes per turn run in the window, ~70 MB at 2,000 turns/s. An entry reclaimed later than
 * this runs, and the coordinator drops its outcome as stale.
 */
export const TURN_MARK_TTL_MS = 5 * 60 * 1000;

/** The step key of an entry that can be marked: a WORK or REPLY whose coordinator stamped the envelope's `turn`. */
function markable(envelope: Envelope): boolean {
  return envelope.turn !== undefined && envelope.taskId !== "" && envelope.stepId !== "";
}

/** `<attempt>:<turn>`, compared as numbers. */
function markOf(envelope: Envelope): string {
  return `${envelope.attempt}:${envelope.turn!}`;
}

/** Queues `SET mark PX ttl` for each first delivery on `pipeline` (the claims' pipeline: no round trip of its own). */
export function recordTurnMarks(pipeline: ChainableCommander, keyOf: (envelope: Envelope) => string, entries: readonly BusEntry[]): void {
  for (const { envelope } of entries) if (markable(envelope)) pipeline.set(keyOf(envelope), markOf(envelope), "PX", TURN_MARK_TTL_MS);
}

/**
 * Per entry, in order: true when the step's mark names a later attempt, or a later turn of the same attempt, than the
 * entry carries. Unmarked entries and steps, and marks that do not parse, are false (the entry runs).
 */
export async function supersededTurns(redis: RedisClient, keyOf: (envelope: Envelope) => string, entries: readonly BusEntry[]): Promise<boolean[]> {
  const asked = entries.filter((entry) => markable(entry.envelope));
  if (asked.length === 0) return entries.map(() => false);
  const marks = await redis.mget(...asked.map((entry) => keyOf(entry.envelope)));
  const byEntry = new Map(asked.map((entry, index) => [entry, marks[index] ?? null]));
  return entries.map((entry) => {
    const mark = parseMark(byEntry.get(entry) ?? null);
    if (!mark) return false;
    const { attempt, turn } = entry.envelope;
    return mark.attempt > attempt || (mark.attempt === attempt && mark.turn > turn!);
  });
}

function parseMark(value: string | null): { attempt: number; turn: number } | undefined {
  const match = value === null ? null : /^(\d{1,10}):(\d{1,10})$/.exec(value);
  return match ? { attempt: Number(match[1]), turn: Number(match[2]) } : undefined;
}
