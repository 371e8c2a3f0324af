/**
 * Applying a coordinator batch so that one poison entry holds back only its own task (see `applyIsolating`).
 */
import type { Pool } from "../store/db.js";
import type { Logger } from "../logger.js";
import type { ApplyResult, Engine, EngineInput, EngineRefusal } from "./engine.js";
import type { OutboxRow } from "../store/engine/engine-store.js";

/** An engine input with what identifies it to the caller (an inbox entry id to acknowledge, an event id). */
export interface DecodedEntry {
  /** Unique within the batch (an inbox batch may span streams, whose entry ids can repeat). */
  entryId: string;
  input: EngineInput;
  /** Where it was read, for logs: the stream entry's own id and stream. */
  source?: { stream: string; id: string };
}

export interface IsolatedApplyDeps {
  engine: Engine;
  pool: Pool;
  logger: Logger;
}

/**
 * What committed: the inbox entries to acknowledge, the outbox rows to publish and the inputs applied; the entries
 * the engine refused (to dead-letter, not acknowledge) are apart.
 */
export interface IsolatedApplyResult {
  ackIds: string[];
  refused: Array<{ entryId: string; input: EngineInput; label: EngineRefusal; reason: string }>;
  outbox: OutboxRow[];
  inputs: EngineInput[];
}

/**
 * The whole batch in one transaction; if that throws, the batch again one task at a time (a task's inputs
 * together, in order), so one poison entry (a value Postgres rejects, a task whose state trips a bug) holds back
 * only its own task: the other tasks commit and are acknowledged, the failing task's entries are redelivered
 * and reach the dead letters after the bus's max deliveries, as a whole batch did before.
 *
 * Splitting costs a transaction per task, so it is skipped where it cannot help: a batch of one task (the retry
 * would be the same transaction), and errors about the database rather than the batch's content (see
 * `engine.isUnavailable`, its store's word), which are thrown as before so the inbox loop backs off. The same
 * check after each task stops the splitting as soon as the database goes away midway; what committed until then is
 * acknowledged.
 * Deadlocks and serialization failures never get here: `engine.apply` retries them itself.
 */
export async function applyIsolating(deps: IsolatedApplyDeps, decoded: readonly DecodedEntry[]): Promise<IsolatedApplyResult> {
  const { engine, pool, logger } = deps;
  const inputs = decoded.map((d) => d.input);
  let batchError: unknown;
  try {
    const result = await engine.apply(pool, inputs);
    const refused = refusedEntries(decoded, result);
    const refusedIds = new Set(refused.map((r) => r.entryId));
    return { ackIds: decoded.map((d) => d.entryId).filter((id) => !refusedIds.has(id)), refused, outbox: result.outbox, inputs };
  } catch (error) {
    batchError = error;
  }
  const groups = groupByTask(decoded);
  if (groups.length < 2 || engine.isUnavailable(batchError)) throw batchError;
  logger.error({ err: batchError, entries: decoded.length, tasks: groups.length }, "coordinator batch failed; applying it again task by task to isolate the failing entries");
  const applied: IsolatedApplyResult = { ackIds: [], refused: [], outbox: [], inputs: [] };
  for (const group of groups) {
    const groupInputs = group.map((d) => d.input);
    try {
      const result = await engine.apply(pool, groupInputs);
      const refused = refusedEntries(group, result);
      const refusedIds = new Set(refused.map((r) => r.entryId));
      applied.ackIds.push(...group.map((d) => d.entryId).filter((id) => !refusedIds.has(id)));
      applied.refused.push(...refused);
      applied.outbox.push(...result.outbox);
      applied.inputs.push(...groupInputs);
    } catch (error) {
      if (engine.isUnavailable(error)) {
        if (applied.ackIds.length === 0 && applied.refused.length === 0) throw error;
        logger.warn({ err: error }, "database unavailable while isolating a failed batch; its remaining entries will be redelivered");
        break;
      }
      const first = group[0]!.input;
      logger.error(
        {
          err: error,
          orgId: first.orgId,
          taskId: first.taskId,
          envelopeIds: groupInputs.map((i) => i.event.eventId),
          entryIds: group.map((d) => d.source?.id ?? d.entryId),
          streams: [...new Set(group.flatMap((d) => (d.source ? [d.source.stream] : [])))],
        },
        "a task's inbox entries failed to apply; left unacknowledged, to be redelivered and dead-lettered after the max deliveries",
      );
    }
  }
  // Nothing applied at all: thrown like a failed batch, so the loop backs off before the redelivery.
  if (applied.ackIds.length === 0 && applied.refused.length === 0) throw batchError;
  return applied;
}

function refusedEntries(decoded: readonly DecodedEntry[], result: ApplyResult): IsolatedApplyResult["refused"] {
  if (result.refused.length === 0) return [];
  const byInput = new Map(decoded.map((d) => [d.input, d.entryId]));
  return result.refused.flatMap((r) => {
    const entryId = byInput.get(r.input);
    return entryId === undefined ? [] : [{ entryId, input: r.input, label: r.label, reason: r.reason }];
  });
}

/** The entries per task, tasks in order of first appearance, each task's entries in batch order. */
function groupByTask(decoded: readonly DecodedEntry[]): DecodedEntry[][] {
  const groups = new Map<string, DecodedEntry[]>();
  for (const d of decoded) {
    const group = groups.get(d.input.taskId);
    if (group) group.push(d);
    else groups.set(d.input.taskId, [d]);
  }
  return [...groups.values()];
}
