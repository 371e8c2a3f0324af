/**
 * The turn-check port: whether a reclaimed entry's turn is still the step's current one.
 *
 * A bus entry delivered more than once may be a turn whose outcome was already published before its worker died
 * (published, then killed before the acknowledgement). Running it again would run an old turn beside the next one —
 * two turns of one step at once, which fan-out promises never happens. The coordinator would drop the stale
 * outcome, but the handler's side effects would already have happened. So before re-running a redelivered entry,
 * the harness asks this port; the first delivery never pays the question.
 */

/** Which turn of which step attempt an entry starts: the WORK or REPLY's step, attempt and `turn`. */
export interface TurnRef {
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  turn: number;
}

export interface TurnCheck {
  /**
   * False only when the step has certainly moved past this turn (it stood down, finished, or is on another
   * attempt). When in doubt — no such step, or the store cannot answer — true: the coordinator still drops a stale
   * outcome by step state, so running is safe where skipping could strand the step. A rejection is read as true.
   */
  isCurrent(ref: TurnRef): Promise<boolean>;
}
