/**
 * Who may touch a step (pure; used by decide.ts under the task lock): the authenticated sender of a RESULT,
 * QUERY or heartbeat must be the step's current destination — the worker queue it was dispatched to, or, for a
 * `foreign:KEY` step, the gateway speaking for that agent. Anything else is refused, whatever the envelope claims.
 */
import type { CoordinatorEvent, EventSender, StepRecord, TaskState } from "./model.js";

/** Why `event` may not be applied to `state`, or undefined when its sender may touch the step it names. */
export function refuseSender(state: TaskState, event: CoordinatorEvent): string | undefined {
  switch (event.type) {
    case "result":
      return refuseOnStep(state, event.stepId, event.sender, "RESULT");
    case "query":
      if (event.sender.kind === "gateway") return "the gateway sent a QUERY: only a worker delegates";
      return refuseOnStep(state, event.originStepId, event.sender, "QUERY");
    case "heartbeat":
      // A worker for its own queue's step; the gateway for a FOREIGN step of the agent it speaks for (an MCP tool's
      // progress, src/foreign/call-heartbeat.ts) — the same rule as a RESULT. A heartbeat for an attempt no longer
      // in flight is not refused but ignored (decide.ts onHeartbeat): a call outliving its attempt is a race, not
      // a forgery.
      return refuseOnStep(state, event.stepId, event.sender, "heartbeat");
    case "reply_request":
      // A worker replies only for a step dispatched to its own queue; the tenant (API) for the task as a whole.
      // The attempt, the step's status and the grace window are checked in decide-reply.ts.
      if (event.sender.kind === "api") return undefined;
      if (event.sender.kind !== "queue") return `a reply from ${describeSender(event.sender)}: only a worker or the tenant replies`;
      if (event.stepId === null) return `a reply from ${event.sender.endpoint} names no step`;
      return refuseOnStep(state, event.stepId, event.sender, "reply");
    default:
      return undefined;
  }
}

function refuseOnStep(state: TaskState, stepId: string, sender: EventSender, what: string): string | undefined {
  if (sender.kind === "coordinator") return undefined;
  if (sender.kind === "api") return `${what} from the API (${sender.actor}) names step ${stepId}: only a worker speaks for a step`;
  const step = state.steps.get(stepId);
  if (!step) return `${what} from ${describeSender(sender)} for step ${JSON.stringify(stepId)}, which task ${state.task.id} does not have`;
  const expected = sender.kind === "gateway" ? `foreign:${sender.agent}` : sender.endpoint;
  if (expected === step.destination) return undefined;
  if (step.destination.startsWith("foreign:") && sender.kind === "queue") {
    return `${what} from ${sender.endpoint} for step ${stepId}, a FOREIGN step (${step.destination}): its result comes only through the callback route or the sweep`;
  }
  return `${what} from ${describeSender(sender)} for step ${stepId}, whose destination is ${step.destination}`;
}

/** The audit row's actor: the authenticated identity (for a FOREIGN result, the agent the step was sent to). */
export function actorOf(sender: EventSender, step: StepRecord): string {
  switch (sender.kind) {
    case "queue":
      return `worker:${sender.endpoint}`;
    case "gateway":
      return step.destination;
    case "coordinator":
      return "coordinator";
    case "api":
      return sender.actor;
  }
}

function describeSender(sender: EventSender): string {
  switch (sender.kind) {
    case "queue":
      return sender.endpoint;
    case "gateway":
      return `the gateway (for foreign:${sender.agent})`;
    case "api":
      return `the API (${sender.actor})`;
    case "coordinator":
      return "the coordinator";
  }
}
