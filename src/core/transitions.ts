/**
 * The whole state machine in one place: every way a step's or a task's status may change, as (from, event, to)
 * rows. The decision code changes a status only through `Draft.moveStep` / `Draft.moveTask`, which look the row up,
 * so a status change the table does not list is a bug found where it happens (an internal error), and a new
 * construct adds rows here rather than branches elsewhere. The property tests (test/coordinator/
 * decide.property.test.ts) check that every status change a random run of events makes is a row of this table.
 *
 * A row whose `from` equals its `to` is a real transition with the same name: a timed-out attempt dispatched again
 * stays `dispatched` with a new attempt; a step released while a limit still says no is held again.
 */
import { SwitchyardError, ErrorCode } from "../errors.js";
import type { StepStatus, TaskStatus } from "./model.js";

/** What happened to a step. Each event names one target status. */
export type StepEvent =
  /** A hop of the step (its WORK, or the REPLY an orchestrator waits for) passed the governor and goes out. */
  | "dispatch"
  /** The governor asked for an approval before the hop may go out. */
  | "await_approval"
  /** A dispatch limit (tenant, destination, concurrency key) keeps the ready step back until the releaser lets it go. */
  | "hold"
  /** The orchestrator's turn asked sub-queries and stood down until their replies come. */
  | "stand_down"
  /** A failed attempt that may be tried again waits for its backoff. */
  | "retry"
  | "complete"
  /** Denied, refused, out of attempts, or its approval denied: the step is over, failed closed. */
  | "fail"
  /** The task was cancelled, failed or completed around it. */
  | "cancel";

export type TaskEvent = "park" | "resume" | "complete" | "fail" | "cancel";

export interface Transition<S extends string, E extends string> {
  readonly from: S;
  readonly event: E;
  readonly to: S;
}

const OPEN_STEP: readonly StepStatus[] = ["pending", "held", "dispatched", "retrying", "parked", "waiting"];

/** Steps: a row per (from, event). A hop can be re-governed from any status in which its next hop is due. */
export const STEP_TRANSITIONS: readonly Transition<StepStatus, StepEvent>[] = [
  // A first dispatch (pending), after a release (held), a backoff (retrying), an approval (parked), a timeout
  // (dispatched, waiting: the next attempt), or a reply delivered to a waiting orchestrator.
  ...rows(["pending", "held", "retrying", "parked", "dispatched", "waiting"], "dispatch", "dispatched"),
  ...rows(["pending", "held", "retrying", "dispatched", "waiting"], "await_approval", "parked"),
  ...rows(["pending", "held", "retrying", "dispatched", "waiting", "parked"], "hold", "held"),
  { from: "dispatched", event: "stand_down", to: "waiting" },
  { from: "dispatched", event: "retry", to: "retrying" },
  { from: "dispatched", event: "complete", to: "completed" },
  ...rows(OPEN_STEP, "fail", "failed"),
  ...rows(OPEN_STEP, "cancel", "cancelled"),
];

/** Tasks: running and parked are open (parked while any step waits on an approval); the rest are final. */
export const TASK_TRANSITIONS: readonly Transition<TaskStatus, TaskEvent>[] = [
  { from: "running", event: "park", to: "parked" },
  { from: "parked", event: "resume", to: "running" },
  ...rows(["running", "parked"], "complete", "completed"),
  ...rows(["running", "parked"], "fail", "failed"),
  ...rows(["running", "parked"], "cancel", "cancelled"),
];

const stepIndex = indexOf(STEP_TRANSITIONS);
const taskIndex = indexOf(TASK_TRANSITIONS);

/** The status a step moves to on `event`; an internal error when the table has no such row (a bug in decision code). */
export function nextStepStatus(from: StepStatus, event: StepEvent): StepStatus {
  return lookUp(stepIndex, "step", from, event);
}

export function nextTaskStatus(from: TaskStatus, event: TaskEvent): TaskStatus {
  return lookUp(taskIndex, "task", from, event);
}

/** Whether some event moves a step from `from` to `to` (what the property tests check of every observed change). */
export function isStepTransition(from: StepStatus, to: StepStatus): boolean {
  return STEP_TRANSITIONS.some((t) => t.from === from && t.to === to);
}

export function isTaskTransition(from: TaskStatus, to: TaskStatus): boolean {
  return TASK_TRANSITIONS.some((t) => t.from === from && t.to === to);
}

function rows<S extends string, E extends string>(froms: readonly S[], event: E, to: S): Transition<S, E>[] {
  return froms.map((from) => ({ from, event, to }));
}

function indexOf<S extends string, E extends string>(table: readonly Transition<S, E>[]): Map<string, S> {
  const index = new Map<string, S>();
  for (const t of table) {
    const key = `${t.from}:${t.event}`;
    if (index.has(key)) throw new Error(`transitions: two rows for ${key}`);
    index.set(key, t.to);
  }
  return index;
}

function lookUp<S extends string>(index: Map<string, S>, what: string, from: S, event: string): S {
  const to = index.get(`${from}:${event}`);
  if (to === undefined) {
    throw new SwitchyardError(ErrorCode.Internal, `decide: a ${what} cannot ${event.replace("_", " ")} from ${from} (no such transition)`, {
      details: { from, event },
    });
  }
  return to;
}
