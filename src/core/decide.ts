/**
 * The coordinator's decision function: (task state, event, context) → (new state, effects). Pure: no clock,
 * randomness or I/O — time, ids, hashing and the governor come in through `DecideContext`. Every transition is
 * guarded by the step's status and attempt, so a duplicated, stale or reordered event changes nothing.
 */
import { Draft, roundCost } from "./draft.js";
import { deliverNextReply, dispatchStep, finishStep, recordOrphan, releaseCheckpoint } from "./hops.js";
import { stepSchemaError, stepTimeoutMs } from "./hop-facts.js";
import { onQuery } from "./stand-down.js";
import { TERMINAL_STEP_STATUSES, type CoordinatorEvent, type DecideContext, type Decision, type StepError, type StepRecord, type TaskState, type TaskStatus } from "./model.js";
import { actorOf, refuseSender } from "./sender-guard.js";
import { decideReplyApproval, decideReplyRequest, refuseReplyRequest } from "./decide-reply.js";

/** The step error of a FOREIGN hop given up on without a re-send (listed by src/foreign/dead-letters.ts). */
const FOREIGN_NOT_RETRIED = "FOREIGN_NOT_RETRIED";

type EventOf<T extends CoordinatorEvent["type"]> = Extract<CoordinatorEvent, { type: T }>;

export function decide(state: TaskState, event: CoordinatorEvent, ctx: DecideContext): Decision {
  // First, before any guard: an envelope from someone who may not touch the step is refused, not merely stale.
  // (The step's own worker replying at the wrong time is not refused here: decideReplyRequest records that.)
  const refused = refuseSender(state, event) ?? (event.type === "reply_request" ? refuseReplyRequest(state, event, ctx) : undefined);
  if (refused) return { state, effects: [], refused };
  const draft = new Draft(state, ctx);
  let ignored: string | undefined;
  switch (event.type) {
    case "task_started":
      ignored = onTaskStarted(draft);
      break;
    case "result":
      ignored = onResult(draft, event);
      break;
    case "query":
      ignored = onQuery(draft, event);
      break;
    case "approval_decided":
      ignored = onApprovalDecided(draft, event);
      break;
    case "step_due":
      ignored = onStepDue(draft, event);
      break;
    case "heartbeat":
      ignored = onHeartbeat(draft, event);
      break;
    case "cancel":
      ignored = onCancel(draft, event);
      break;
    case "repair":
      ignored = onRepair(draft, event);
      break;
    case "release":
      ignored = onRelease(draft, event);
      break;
    case "reply_request":
      ignored = decideReplyRequest(draft, event);
      break;
  }
  if (ignored) return { state, effects: [{ type: "count", metric: "stale_event", labels: { event: event.type } }], ignored };
  advance(draft);
  return { state: draft.toState(), effects: draft.effects };
}

function onTaskStarted(draft: Draft): string | undefined {
  if (!draft.isTaskOpen()) return "task is not open";
  if ([...draft.steps.values()].some((s) => s.status !== "pending")) return "task already started";
  return undefined; // advance() dispatches the ready steps
}

function onResult(draft: Draft, event: EventOf<"result">): string | undefined {
  const step = draft.step(event.stepId);
  if (!step) return "unknown step";
  if (step.status !== "dispatched" || step.attempt !== event.attempt) return "stale result";
  // A RESULT of a turn that already stood down: its entry was redelivered and run again after its QUERY was applied.
  if (event.turn !== undefined && event.turn !== step.turns) return "stale result (an older turn)";
  if (!draft.isTaskOpen()) return "task is not open";

  const cost = roundCost(Math.max(0, event.cost));
  const delta = cost - draft.estimateOf(step);
  draft.accrue(delta);
  draft.updateStep(step.stepId, { cost: roundCost(step.cost + delta) });
  // An output that does not match the step's output_schema fails the step closed, as if the handler had failed.
  const outputError = event.ok ? stepSchemaError(draft, step, "output", event.output) : undefined;
  const ok = event.ok && !outputError;
  draft.audit({
    action: "result",
    actor: actorOf(event.sender, step),
    destination: "coordinator",
    verdict: ok ? "accepted" : "failed",
    rule: outputError ? "builtin:output-schema" : "builtin:result",
    reason: outputError ? outputError.message : resultReason(event, cost),
    payloadHash: event.payloadHash,
    cost,
    stepId: step.stepId,
    envelopeId: event.eventId,
  });
  if (ok) {
    finishStep(draft, step.stepId, { ok: true, output: event.output, error: null });
    return undefined;
  }
  const error = outputError ?? event.error ?? { code: "HANDLER_FAILED", message: "worker reported an error", retryable: true };
  const undelivered = event.undelivered === true;
  if (error.retryable !== false && step.attempt < maxAttempts(draft, step, undelivered)) {
    releaseCheckpoint(draft, step.stepId, `attempt ${step.attempt} of ${step.stepId} failed and is retried`);
    draft.moveStep(step.stepId, "retry", { error, dueAtMs: draft.ctx.now + backoffMs(draft, step) });
    return undefined;
  }
  finishStep(draft, step.stepId, { ok: false, output: null, error: failedError(draft, step, error, undelivered) });
  return undefined;
}

/** A FOREIGN result names how its cost was reached, so the audit trail says whether the agent or the registry priced it. */
function resultReason(event: EventOf<"result">, cost: number): string {
  const base = event.ok ? "step attempt completed" : `${event.error?.code ?? "ERROR"}: ${event.error?.message ?? ""}`;
  return event.pricedBy ? `${base} (cost ${cost} priced by ${event.pricedBy})` : base;
}

function onApprovalDecided(draft: Draft, event: EventOf<"approval_decided">): string | undefined {
  // The shell gathers a parked reply only for an approval no step holds (see src/coordinator/reply-batch.ts).
  if (draft.ctx.reply?.kind === "approval") return decideReplyApproval(draft, event, draft.ctx.reply);
  const step = [...draft.steps.values()].find((s) => s.approvalId === event.approvalId);
  if (!step || step.status !== "parked") return "approval is not pending";
  if (!draft.isTaskOpen()) return "task is not open";
  // A step parks either before its own dispatch or, holding received replies, before the first of them goes out.
  const isReply = (step.checkpoint?.arrived.length ?? 0) > 0;
  draft.audit({
    action: "approval",
    actor: event.actor,
    destination: step.destination,
    verdict: event.approve ? "approved" : "denied",
    rule: `approval:${event.approvalId}`,
    reason: event.reason || (event.approve ? "approved" : "denied"),
    payloadHash: "",
    cost: 0,
    stepId: step.stepId,
    envelopeId: event.eventId,
  });
  draft.effects.push({ type: "close_approval", approvalId: event.approvalId, approved: event.approve, actor: event.actor, reason: event.reason });
  if (!event.approve) {
    // The held reply is accounted by the denial's own row; only the replies queued behind it become orphans. The
    // attempt ends without a RESULT, so its reserved estimate goes back.
    if (isReply) {
      draft.releaseEstimate(step.stepId);
      draft.updateStep(step.stepId, { checkpoint: { ...step.checkpoint!, arrived: step.checkpoint!.arrived.slice(1) } });
    }
    finishStep(draft, step.stepId, {
      ok: false,
      output: null,
      error: { code: "POLICY_DENIED", message: `approval denied by ${event.actor}${event.reason ? `: ${event.reason}` : ""}`, retryable: false },
    });
    return undefined;
  }
  const approvedBy = { approvalId: event.approvalId, actor: event.actor };
  if (isReply) deliverNextReply(draft, step.stepId, approvedBy);
  else dispatchStep(draft, step.stepId, approvedBy);
  return undefined;
}

function onStepDue(draft: Draft, event: EventOf<"step_due">): string | undefined {
  const step = draft.step(event.stepId);
  if (!step || step.attempt !== event.attempt || step.dueAtMs === null || step.dueAtMs > draft.ctx.now) return "not due";
  if (!draft.isTaskOpen()) return "task is not open";
  if (step.status === "retrying") {
    dispatchStep(draft, step.stepId);
    return undefined;
  }
  if (step.status !== "dispatched" && step.status !== "waiting") return "not in flight";
  // The timed-out attempt's estimate is released; its result, if it ever comes, is stale.
  draft.releaseEstimate(step.stepId);
  releaseCheckpoint(draft, step.stepId, `attempt ${step.attempt} of ${step.stepId} timed out`);
  draft.audit({
    action: "timeout",
    actor: "coordinator",
    destination: step.destination,
    verdict: "failed",
    rule: "builtin:timeout",
    reason: `attempt ${step.attempt} got no result within ${stepTimeoutMs(draft, step)} ms`,
    payloadHash: "",
    cost: 0,
    stepId: step.stepId,
    envelopeId: event.eventId,
  });
  if (step.attempt < maxAttempts(draft, step)) {
    dispatchStep(draft, step.stepId);
  } else {
    finishStep(draft, step.stepId, { ok: false, output: null, error: timeoutError(draft, step) });
  }
  return undefined;
}

/** The releaser chose a held step: dispatched now (governed as any hop), or held again if a limit still says no. */
function onRelease(draft: Draft, event: EventOf<"release">): string | undefined {
  const step = draft.step(event.stepId);
  if (!step || step.status !== "held") return "not held";
  if (!draft.isTaskOpen()) return "task is not open";
  dispatchStep(draft, step.stepId, undefined, { released: true });
  return undefined;
}

function onHeartbeat(draft: Draft, event: EventOf<"heartbeat">): string | undefined {
  const step = draft.step(event.stepId);
  if (!step || step.status !== "dispatched" || step.attempt !== event.attempt) return "not in flight";
  draft.updateStep(step.stepId, { dueAtMs: draft.ctx.now + stepTimeoutMs(draft, step) });
  return undefined;
}

function onCancel(draft: Draft, event: EventOf<"cancel">): string | undefined {
  if (!draft.isTaskOpen()) return "task is not open";
  draft.audit({
    action: "cancel",
    actor: event.actor,
    destination: "coordinator",
    verdict: "cancelled",
    rule: "builtin:cancel",
    reason: event.reason || "cancelled",
    payloadHash: "",
    cost: 0,
    stepId: "",
    envelopeId: event.eventId,
  });
  draft.moveTask("cancel", { finishedAtMs: draft.ctx.now, error: { code: "CANCELLED", message: event.reason || "cancelled" } });
  draft.cancelOpenSteps("task cancelled");
  return undefined;
}

/**
 * A pending workflow step whose needs are all complete can only exist if a transition was lost (every completion
 * dispatches what it made ready, in the same transaction). The step is recorded as repaired — audited, logged and
 * counted, so the bug that stranded it is visible — and `advance()` then dispatches it like any ready step.
 */
function onRepair(draft: Draft, event: EventOf<"repair">): string | undefined {
  if (!draft.isTaskOpen()) return "task is not open";
  const stranded = readyPendingSteps(draft);
  if (stranded.length === 0) return "nothing stranded";
  for (const stepId of stranded) {
    draft.audit({
      action: "repair",
      actor: "coordinator",
      destination: draft.step(stepId)!.destination,
      verdict: "repaired",
      rule: "builtin:repair",
      reason: "pending step whose needs were all complete was never dispatched",
      payloadHash: "",
      cost: 0,
      stepId,
      envelopeId: event.eventId,
    });
    draft.effects.push({ type: "log", level: "warn", message: "stranded step repaired", fields: { orgId: draft.task.orgId, taskId: draft.task.id, stepId } });
    draft.effects.push({ type: "count", metric: "stranded_step_repaired" });
  }
  return undefined;
}

/** Workflow steps still pending although every step they need has completed. */
function readyPendingSteps(draft: Draft): string[] {
  return draft.workflow.steps
    .filter((def) => draft.step(def.id)?.status === "pending" && def.needs.every((need) => draft.step(need)?.status === "completed"))
    .map((def) => def.id);
}

/** `undelivered`: the failed attempt never reached its destination (see the result event's `undelivered`). */
function maxAttempts(draft: Draft, step: StepRecord, undelivered = false): number {
  if (step.kind === "delegation") return 1;
  // A re-sent FOREIGN hop is a new task at the agent (its outside effects and cost again): only an agent the
  // tenant registered as idempotent gets the step's retries — or a hop whose send never left, which has no effect
  // to repeat.
  if (notRetriedForeign(draft, step) && !undelivered) return 1;
  return retriesOf(draft, step) + 1;
}

function retriesOf(draft: Draft, step: StepRecord): number {
  return draft.workflow.steps.find((s) => s.id === step.stepId)?.retries ?? 0;
}

function notRetriedForeign(draft: Draft, step: StepRecord): boolean {
  const agent = foreignAgentKey(step.destination);
  return agent !== undefined && !(draft.ctx.tenant.idempotentForeignAgents?.has(agent) ?? false);
}

function foreignAgentKey(destination: string): string | undefined {
  return destination.startsWith("foreign:") ? destination.slice("foreign:".length) : undefined;
}

/**
 * The error a failed attempt leaves on its step. A retryable failure of a FOREIGN hop that was not re-sent only
 * because the agent is not registered idempotent fails as FOREIGN_NOT_RETRIED, like a timed-out one, so it is
 * listed with the foreign dead letters; the agent's own code and message stay in the message.
 */
function failedError(draft: Draft, step: StepRecord, error: StepError, undelivered: boolean): StepError {
  const retries = retriesOf(draft, step);
  if (error.retryable === false || undelivered || retries === 0 || step.kind === "delegation" || !notRetriedForeign(draft, step)) return error;
  return {
    code: FOREIGN_NOT_RETRIED,
    message: `foreign agent ${foreignAgentKey(step.destination)} failed (${error.code}: ${error.message}); not re-sent (retries: ${retries}) because the agent is not registered idempotent — a re-send would open a new task there`,
    retryable: false,
  };
}

function timeoutError(draft: Draft, step: StepRecord): StepError {
  const retries = retriesOf(draft, step);
  if (retries > 0 && notRetriedForeign(draft, step)) {
    return {
      code: FOREIGN_NOT_RETRIED,
      message: `foreign agent ${foreignAgentKey(step.destination)} gave no result within ${stepTimeoutMs(draft, step)} ms; not re-sent (retries: ${retries}) because the agent is not registered idempotent — a re-send would open a new task there`,
      retryable: false,
    };
  }
  return { code: "TIMEOUT", message: `no result after ${step.attempt} attempt(s)`, retryable: false };
}

function backoffMs(draft: Draft, step: StepRecord): number {
  const base = draft.workflow.steps.find((s) => s.id === step.stepId)?.backoffMs ?? 1000;
  return base * 2 ** Math.max(0, step.attempt - 1);
}

/** Dispatches every workflow step whose needs are complete, then derives the task's status. */
function advance(draft: Draft): void {
  if (!draft.isTaskOpen()) return;
  for (const def of draft.workflow.steps) {
    const step = draft.step(def.id);
    if (!step || step.status !== "pending") continue;
    if (def.needs.every((need) => draft.step(need)?.status === "completed")) {
      const floor = Math.max(def.clearance, ...def.needs.map((n) => draft.step(n)?.clearance ?? 0));
      draft.updateStep(def.id, { clearance: floor });
      dispatchStep(draft, def.id);
      if (!draft.isTaskOpen()) return;
    }
  }
  const workflowSteps = draft.workflow.steps.map((d) => draft.step(d.id));
  let status: TaskStatus = "running";
  if (workflowSteps.every((s) => s?.status === "completed")) status = "completed";
  else if ([...draft.steps.values()].some((s) => s.status === "parked")) status = "parked";
  if (status !== draft.task.status) {
    draft.moveTask(status === "completed" ? "complete" : status === "parked" ? "park" : "resume", { finishedAtMs: status === "completed" ? draft.ctx.now : null });
  }
  if (status === "completed") closeOpenDelegations(draft);
}

/**
 * A task completes when its workflow steps have, but sub-queries an orchestrator no longer waited for may still be
 * out. They are cancelled (no step of an ended task stays due, or the sweep would fire it forever) and their
 * replies, which can no longer reach anyone, are recorded as orphans now.
 */
function closeOpenDelegations(draft: Draft): void {
  const open = [...draft.steps.values()].filter((s) => !TERMINAL_STEP_STATUSES.includes(s.status));
  if (open.length === 0) return;
  for (const step of open) if (step.kind === "delegation") recordOrphan(draft, step.stepId, "the task completed before it replied");
  draft.cancelOpenSteps("task completed");
}
