/**
 * Entries a turn acknowledges without running the handler: a second copy of an envelope another entry took first
 * (`duplicate`), and a redelivered turn that already stood down (`stale`, by the turn marks or the TurnCheck).
 * Skipping is only ever on a certain answer: when the question cannot be answered, the entry runs and the
 * coordinator drops a stale outcome.
 */
import type { TurnState } from "./turn-state.js";
import type { TurnOutcome } from "./turn.js";
import type { Work } from "./types.js";

/** Asks the TurnCheck; a check that fails says "current": the coordinator still drops a stale outcome. */
export async function isCurrentTurn(turn: TurnState, work: Work): Promise<boolean> {
  const deps = turn.deps;
  if (!deps.turnCheck) return true;
  try {
    return await deps.turnCheck.isCurrent({ orgId: work.orgId, taskId: work.taskId, stepId: work.stepId, attempt: work.attempt, turn: work.turn });
  } catch (error) {
    if (deps.health?.absorb(error)) turn.logger.debug({ err: error }, "could not check the turn in an outage; running the entry");
    else turn.logger.warn({ err: error }, "could not check whether the turn is current; running the entry");
    return true;
  }
}

/** Acknowledges an entry without running it: its turn's outcome is already out, or another copy runs it. */
export async function skipUnrun(turn: TurnState, outcome: "stale" | "duplicate", fields: Record<string, unknown>, message: string): Promise<TurnOutcome> {
  const deps = turn.deps;
  try {
    await deps.bus.ack(deps.stream, deps.group, [turn.entryId]);
  } catch (error) {
    // Still pending: it is reclaimed and checked again.
    if (!deps.health?.absorb(error)) turn.logger.warn({ err: error, outcome }, `could not acknowledge a ${outcome} entry`);
  }
  turn.logger.info({ outcome, ...fields }, message);
  return outcome;
}
