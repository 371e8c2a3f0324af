/**
 * A turn standing down (issue 14): the QUERY a handler's `ctx.delegate` / `ctx.delegateAll` / `ctx.awaitMore`
 * produced. Each sub-query is audited on the origin (`query`) and becomes its own delegation step, dispatched as
 * its own governed hop; the origin waits, keeping a checkpoint of what it awaits. Replies then come back one at a
 * time in the order the coordinator applies the delegates' results (hops.ts, `deliverNextReply`).
 *
 * Only the step's current turn may stand down (status `dispatched`, its attempt, its turn number): a QUERY of an
 * older turn — a redelivered entry run again — is stale and changes nothing.
 */
import { Draft, roundCost } from "./draft.js";
import { deliverNextReply, dispatchStep, finishStep } from "./hops.js";
import { stepTimeoutMs } from "./hop-facts.js";
import { DEFAULT_DELEGATION_LIMITS, MAX_DELEGATION_DEPTH, TERMINAL_STEP_STATUSES, type AwaitedReply, type Checkpoint, type CoordinatorEvent, type StepError, type StepRecord } from "./model.js";
import { actorOf } from "./sender-guard.js";

type QueryEvent = Extract<CoordinatorEvent, { type: "query" }>;

/** The step error of a turn that asked more sub-queries than the limits allow. */
export const DELEGATION_LIMIT = "DELEGATION_LIMIT";

/** The step error of work past the delegation-depth ceiling that asked a sub-query. */
export const DELEGATION_DEPTH = "DELEGATION_DEPTH";

export function onQuery(draft: Draft, event: QueryEvent): string | undefined {
  const origin = draft.step(event.originStepId);
  if (!origin) return "unknown origin step";
  if (origin.status !== "dispatched" || origin.attempt !== event.originAttempt || origin.turns !== event.turn) return "stale query";
  if (!draft.isTaskOpen()) return "task is not open";

  const spent = roundCost(Math.max(0, event.cost));
  draft.accrue(spent);
  draft.updateStep(origin.stepId, { cost: roundCost(origin.cost + spent) });
  const checkpoint: Checkpoint = origin.checkpoint ?? { state: null, awaiting: [], arrived: [] };
  const actor = actorOf(event.sender, origin);

  const refusal = refusalOf(draft, origin, checkpoint, event);
  if (refusal) {
    draft.audit({
      action: "query",
      actor,
      destination: "coordinator",
      verdict: "denied",
      rule: refusal.rule,
      reason: refusal.error.message,
      payloadHash: draft.ctx.hashPayload(JSON.stringify(event.queries.map((q) => q.query ?? null))),
      cost: spent,
      stepId: origin.stepId,
      envelopeId: event.eventId,
    });
    // The attempt ends without a RESULT: release its in-flight estimate, as a timeout does.
    draft.releaseEstimate(origin.stepId);
    finishStep(draft, origin.stepId, { ok: false, output: null, error: refusal.error });
    return undefined;
  }

  const awaiting: AwaitedReply[] = [...checkpoint.awaiting];
  const delegates: StepRecord[] = [];
  let asked = origin.delegations;
  for (const [index, query] of event.queries.entries()) {
    const delegateStepId = `${origin.stepId}.d${++asked}`;
    const of = event.queries.length > 1 ? ` (${index + 1} of ${event.queries.length})` : "";
    draft.audit({
      action: "query",
      actor,
      destination: "coordinator",
      verdict: "accepted",
      rule: "builtin:query",
      reason: `delegation to ${query.destination} as ${delegateStepId}${of}`,
      payloadHash: draft.ctx.hashPayload(JSON.stringify(query.query ?? null)),
      // The turn's spend is accounted once, on its first row.
      cost: index === 0 ? spent : 0,
      stepId: origin.stepId,
      envelopeId: event.eventId,
    });
    awaiting.push({ delegateStepId, correlationId: query.correlationId });
    delegates.push(delegateStep(draft, origin, delegateStepId, query));
  }
  if (event.queries.length === 0) {
    draft.audit({
      action: "query",
      actor,
      destination: "coordinator",
      verdict: "accepted",
      rule: "builtin:await_more",
      reason: `keeps waiting for ${awaiting.length} repl${awaiting.length === 1 ? "y" : "ies"}: ${awaiting.map((a) => a.correlationId).join(", ")}`,
      payloadHash: draft.ctx.hashPayload(JSON.stringify(event.state ?? null)),
      cost: spent,
      stepId: origin.stepId,
      envelopeId: event.eventId,
    });
  }

  // The origin's turn stands down; its in-flight estimate stays reserved until the step completes.
  draft.moveStep(origin.stepId, "stand_down", {
    delegations: asked,
    turns: origin.turns + 1,
    checkpoint: { state: event.state ?? null, awaiting, arrived: checkpoint.arrived },
    dueAtMs: draft.ctx.now + stepTimeoutMs(draft, origin),
  });
  // A sub-query denied at once reports back as an error reply, which joins the queue like any other — and may end
  // the origin (its REPLY denied) or the task: the rest of the fan-out is then not sent. All are added first, so a
  // failing task cancels those not yet dispatched with everything else that is open.
  for (const delegate of delegates) draft.addStep(delegate);
  for (const delegate of delegates) {
    if (draft.step(delegate.stepId)!.status !== "pending") continue;
    if (TERMINAL_STEP_STATUSES.includes(draft.step(origin.stepId)!.status)) {
      draft.moveStep(delegate.stepId, "cancel");
      continue;
    }
    dispatchStep(draft, delegate.stepId);
  }
  // Replies that arrived while the turn ran go out now, first come first.
  deliverNextReply(draft, origin.stepId);
  return undefined;
}

function delegateStep(draft: Draft, origin: StepRecord, stepId: string, query: QueryEvent["queries"][number]): StepRecord {
  return {
    taskId: draft.task.id,
    stepId,
    orgId: draft.task.orgId,
    kind: "delegation",
    status: "pending",
    destination: query.destination,
    attempt: 0,
    // From our own record, never from the envelope: a worker could otherwise claim any depth (and so suppress
    // the REPLY at the ceiling, or escape it).
    depth: origin.depth + 1,
    clearance: origin.clearance,
    dueAtMs: null,
    cost: 0,
    output: null,
    error: null,
    approvalId: null,
    delegation: {
      originStepId: origin.stepId,
      originAttempt: origin.attempt,
      correlationId: query.correlationId,
      queryDepth: origin.depth,
      payload: query.query ?? null,
    },
    checkpoint: null,
    delegations: 0,
    turns: 0,
  };
}

/** Why this stand-down is refused (the step then fails, not retried: the handler asked for what cannot be), if it is. */
function refusalOf(draft: Draft, origin: StepRecord, checkpoint: Checkpoint, event: QueryEvent): { rule: string; error: StepError } | undefined {
  // Work past the ceiling runs but its reply is never delivered (hops.ts replyArrived); letting it delegate again
  // would grow the chain without bound. Read from our own record of the step, never from the envelope.
  if (origin.depth > MAX_DELEGATION_DEPTH && event.queries.length > 0) {
    return {
      rule: "builtin:delegation-depth",
      error: {
        code: DELEGATION_DEPTH,
        message: `step ${origin.stepId} is delegated work ${origin.depth} levels down, past the delegation-depth ceiling of ${MAX_DELEGATION_DEPTH}: it may not delegate again`,
        retryable: false,
      },
    };
  }
  const invalid = (message: string) => ({ rule: "builtin:query", error: { code: "INVALID_ARGUMENT", message, retryable: false } });
  if (event.queries.length === 0 && checkpoint.awaiting.length === 0) {
    return invalid(`step ${origin.stepId} asked to keep waiting (awaitMore) with no reply outstanding`);
  }
  const seen = new Set(checkpoint.awaiting.map((a) => a.correlationId));
  for (const query of event.queries) {
    if (seen.has(query.correlationId)) {
      return invalid(`step ${origin.stepId} asked two sub-queries with correlation id ${JSON.stringify(query.correlationId)} outstanding at once`);
    }
    seen.add(query.correlationId);
  }
  const limits = draft.ctx.delegationLimits ?? DEFAULT_DELEGATION_LIMITS;
  const limit = (message: string) => ({ rule: "builtin:delegation-limit", error: { code: DELEGATION_LIMIT, message, retryable: false } });
  const outstanding = checkpoint.awaiting.length + event.queries.length;
  if (outstanding > limits.maxOutstanding) {
    return limit(
      `step ${origin.stepId} asked ${event.queries.length} sub-quer${event.queries.length === 1 ? "y" : "ies"} with ${checkpoint.awaiting.length} outstanding: ` +
        `at most ${limits.maxOutstanding} may be outstanding per step (SWITCHYARD_DELEGATION_MAX_OUTSTANDING)`,
    );
  }
  const askedThisAttempt = [...draft.steps.values()].filter(
    (s) => s.delegation?.originStepId === origin.stepId && s.delegation.originAttempt === origin.attempt,
  ).length;
  if (askedThisAttempt + event.queries.length > limits.maxPerAttempt) {
    return limit(
      `step ${origin.stepId} asked ${event.queries.length} more sub-quer${event.queries.length === 1 ? "y" : "ies"} after ${askedThisAttempt} in attempt ${origin.attempt}: ` +
        `at most ${limits.maxPerAttempt} may be asked per attempt (SWITCHYARD_DELEGATION_MAX_PER_ATTEMPT)`,
    );
  }
  return undefined;
}
