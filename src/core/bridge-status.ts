/**
 * Whether an `a2a_bridge` row still waits for its agent, and what can name one: pure, shared by the bridge's
 * transitions (foreign/bridge-transition.ts), the features that move bridges and the Postgres adapter that writes them.
 */

export type BridgeStatus =
  | "pending_send"
  | "dispatched"
  | "working"
  | "completed"
  | "failed"
  | "canceled"
  | "rejected"
  | "timed_out"
  | "send_failed";

/** Statuses in which the bridge still waits for the agent; anything else is resolved and never changes again. */
export const OPEN_BRIDGE_STATUSES: readonly BridgeStatus[] = ["pending_send", "dispatched", "working"];

export function isOpen(status: BridgeStatus): boolean {
  return OPEN_BRIDGE_STATUSES.includes(status);
}

const BRIDGE_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether `id` can name a bridge at all (a lowercase UUID); anything else is refused before it reaches SQL. */
export function isBridgeId(id: string): boolean {
  return BRIDGE_ID_RE.test(id);
}
