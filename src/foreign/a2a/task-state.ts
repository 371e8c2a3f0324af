/**
 * One vocabulary for the state of a task at a foreign agent, whichever A2A dialect reported it.
 *
 * v1.0 spells states as ProtoJSON enum names (`TASK_STATE_INPUT_REQUIRED`, or the enum number), v0.3 as kebab-case
 * words (`input-required`). The two spellings never collide, so both are accepted from either dialect: an agent that
 * mixes them up still resolves. What is not a state in either spec is refused where the sender is told (a push is
 * answered 400, `parseForeignTaskState`); in a poll's answer it reads as `unknown` (never terminal,
 * `foreignTaskState`), so a new state from a newer agent parks the bridge instead of resuming the step on a guess.
 */

/** The A2A protocol dialects we speak (JSON-RPC binding only). */
export type A2ADialect = "1.0" | "0.3";
export const A2A_DIALECTS: readonly A2ADialect[] = ["1.0", "0.3"];

export type ForeignTaskState =
  | "submitted"
  | "working"
  | "input_required"
  | "auth_required"
  | "completed"
  | "failed"
  | "canceled"
  | "rejected"
  | "unknown";

export const FOREIGN_TASK_STATES: readonly ForeignTaskState[] = [
  "submitted",
  "working",
  "input_required",
  "auth_required",
  "completed",
  "failed",
  "canceled",
  "rejected",
  "unknown",
];

/** States after which the foreign task never changes again: the step resumes. */
export const TERMINAL_FOREIGN_STATES: readonly ForeignTaskState[] = ["completed", "failed", "canceled", "rejected"];

/** States where the agent waits on its client; we have no human hand-off yet, so the step fails closed on them. */
export const INTERRUPTED_FOREIGN_STATES: readonly ForeignTaskState[] = ["input_required", "auth_required"];

export function isTerminalForeignState(state: ForeignTaskState | undefined): boolean {
  return state !== undefined && TERMINAL_FOREIGN_STATES.includes(state);
}

export function isInterruptedForeignState(state: ForeignTaskState | undefined): boolean {
  return state !== undefined && INTERRUPTED_FOREIGN_STATES.includes(state);
}

const BY_NAME: Readonly<Record<string, ForeignTaskState>> = {
  // v1.0 ProtoJSON enum names
  TASK_STATE_UNSPECIFIED: "unknown",
  TASK_STATE_SUBMITTED: "submitted",
  TASK_STATE_WORKING: "working",
  TASK_STATE_COMPLETED: "completed",
  TASK_STATE_FAILED: "failed",
  TASK_STATE_CANCELED: "canceled",
  TASK_STATE_INPUT_REQUIRED: "input_required",
  TASK_STATE_REJECTED: "rejected",
  TASK_STATE_AUTH_REQUIRED: "auth_required",
  // v0.3 words
  unknown: "unknown",
  submitted: "submitted",
  working: "working",
  completed: "completed",
  failed: "failed",
  canceled: "canceled",
  "input-required": "input_required",
  rejected: "rejected",
  "auth-required": "auth_required",
};

// v1.0 enum numbers (ProtoJSON parsers accept them; the SDK's in-memory objects use them).
const BY_NUMBER: readonly ForeignTaskState[] = [
  "unknown",
  "submitted",
  "working",
  "completed",
  "failed",
  "canceled",
  "input_required",
  "rejected",
  "auth_required",
];

/** Maps a wire state (either dialect's spelling, or a v1.0 enum number) onto our enum; anything else is `unknown`. */
export function foreignTaskState(wire: unknown): ForeignTaskState {
  return parseForeignTaskState(wire) ?? "unknown";
}

/** Like {@link foreignTaskState}, but undefined for what is no state of either spec (e.g. `done`, `TASK_STATE_X`, 9). */
export function parseForeignTaskState(wire: unknown): ForeignTaskState | undefined {
  if (typeof wire === "string") return Object.hasOwn(BY_NAME, wire) ? BY_NAME[wire]! : undefined;
  if (typeof wire === "number" && Number.isInteger(wire)) return BY_NUMBER[wire];
  return undefined;
}

/** The spellings a push may use, for error messages. */
export const WIRE_STATE_NAMES: readonly string[] = Object.keys(BY_NAME);
