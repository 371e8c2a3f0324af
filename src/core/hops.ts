/**
 * Governed hops out of the coordinator: dispatching a step's work and delivering a delegate's REPLY (one at a
 * time, from the origin's queue: see stand-down.ts for how a turn asks). Each hop
 * passes the choke-point in order — payload cap, governor (which clamps clearance and checks budget), audit,
 * cost accrual — and then sends, parks for approval, or fails closed.
 */
import type { Verdict } from "../domain.js";
import { roundCost, type Draft } from "./draft.js";
import { MAX_DELEGATION_DEPTH, type EnvelopeSpec, type StepError, type StepRecord } from "./model.js";
import { actionFor, approvedVerdict, errorFor, hopFacts, replyPayloadJson, replyToField, stepInput, stepSchemaError, stepTimeoutMs } from "./hop-facts.js";
import { concurrencyGroupOf, type ConcurrencyGroup } from "./concurrency-key.js";

const encoder = new TextEncoder();

/**
 * Governs and (on allow) sends the next attempt of `step`. With `approvedBy`, a human's approval satisfies a
 * `requires_approval` verdict — but the governor still runs, so a deny that holds now (egress switched off, a
 * budget exceeded, a tightened policy) still fails the hop closed.
 */
export function dispatchStep(draft: Draft, stepId: string, approvedBy?: { approvalId: string; actor: string }, options: { released?: boolean } = {}): void {
  const step = draft.step(stepId)!;
  // Admission comes before the governor: a held step has made no hop yet (no audit row, nothing sent), and is
  // governed when it is released. A hop a human approved is not held again: the approval was for going now.
  const group = step.kind === "workflow" ? concurrencyGroupOf(draft.workflow.steps.find((s) => s.id === stepId), draft.task.input) : undefined;
  if (!approvedBy && draft.ctx.admission) {
    // A sub-query is asked by work already running (its parent's timeout runs): it goes ahead of new work.
    const gate = draft.ctx.admission.admit(draft.task.orgId, step.destination, options.released ?? false, step.kind !== "workflow", group);
    if (!gate.admit) {
      holdStep(draft, step, gate.reason, group);
      return;
    }
  }
  const action = actionFor(step);
  const cost = draft.estimateOf(step);
  const envelopeId = draft.ctx.newId();
  // `turn` is echoed by the QUERY or RESULT of this turn, so an outcome of an older turn can be told apart.
  const input = stepInput(draft, step);
  const payloadJson = JSON.stringify({ input, turn: step.turns, ...replyToField(draft) });
  const payloadHash = draft.ctx.hashPayload(payloadJson);
  const facts = hopFacts(draft, step, action, step.destination, cost);
  // Checked before the governor: an input the handler cannot take is never parked for a human to approve.
  const inputError = stepSchemaError(draft, step, "input", input);

  let verdict: Verdict;
  if (encoder.encode(payloadJson).byteLength > draft.ctx.maxPayloadBytes) {
    verdict = { verdict: "deny", rule: "builtin:payload-size", reason: `step input exceeds ${draft.ctx.maxPayloadBytes} bytes` };
  } else if (inputError) {
    verdict = { verdict: "deny", rule: "builtin:input-schema", reason: inputError.message };
  } else if (approvedBy) {
    verdict = approvedVerdict(draft.ctx.govern(facts), approvedBy);
  } else {
    verdict = draft.ctx.govern(facts);
  }

  draft.effects.push({ type: "hop", hop: { facts, verdict, envelopeId } });
  draft.audit({
    action,
    actor: "coordinator",
    destination: step.destination,
    verdict: verdict.verdict,
    rule: verdict.rule,
    reason: verdict.reason,
    payloadHash,
    cost: verdict.verdict === "allow" ? cost : 0,
    stepId,
    envelopeId,
  });

  if (verdict.verdict === "requires_approval") {
    const approvalId = draft.ctx.newId();
    draft.moveStep(stepId, "await_approval", { approvalId, dueAtMs: null });
    draft.effects.push({
      type: "open_approval",
      approval: { id: approvalId, orgId: draft.task.orgId, taskId: draft.task.id, stepId, action, destination: step.destination, rule: verdict.rule, reason: verdict.reason, cost, expiresAtMs: draft.ctx.now + draft.ctx.approvalTtlMs },
    });
    return;
  }
  if (verdict.verdict === "deny") {
    const error =
      verdict.rule === "builtin:payload-size" ? { code: "PAYLOAD_TOO_LARGE", message: verdict.reason, retryable: false } : verdict.rule === "builtin:input-schema" && inputError ? inputError : errorFor(verdict);
    finishStep(draft, stepId, { ok: false, error, output: null });
    return;
  }

  const attempt = step.attempt + 1;
  draft.accrue(cost);
  draft.moveStep(stepId, "dispatch", {
    attempt,
    approvalId: null,
    cost: roundCost(step.cost + cost),
    dueAtMs: draft.ctx.now + stepTimeoutMs(draft, step),
    error: null,
    // Counted in its key while dispatched (an approved hop too: it is in flight like any other).
    ...(group || step.concurrencyKey ? { concurrencyKey: group?.key ?? null } : {}),
  });
  const envelope: EnvelopeSpec = {
    id: envelopeId,
    kind: "WORK",
    orgId: draft.task.orgId,
    taskId: draft.task.id,
    stepId,
    attempt,
    destination: step.destination,
    clearanceFloor: step.clearance,
    delegationDepth: step.depth,
    correlationId: step.delegation?.correlationId ?? "",
    payloadJson,
    turn: step.turns,
    createdAtMs: draft.ctx.now,
  };
  draft.effects.push(action === "a2a_egress" ? { type: "foreign_dispatch", envelope } : { type: "send", envelope });
}

/** The step waits in `held_steps` (by priority, then arrival) until the releaser lets it go. */
function holdStep(draft: Draft, step: StepRecord, reason: string, group: ConcurrencyGroup | undefined): void {
  const def = draft.workflow.steps.find((s) => s.id === step.stepId);
  draft.moveStep(step.stepId, "hold", { dueAtMs: null });
  draft.effects.push({
    type: "hold",
    held: {
      orgId: draft.task.orgId,
      taskId: draft.task.id,
      stepId: step.stepId,
      destination: step.destination,
      // A held sub-query is released first (its parent waits on it, under a step timeout), then by arrival.
      priority: step.kind === "workflow" ? (def?.priority ?? DEFAULT_PRIORITY) : MAX_PRIORITY,
      concurrencyKey: group?.key ?? null,
      concurrencyLimit: group?.limit ?? null,
      reason,
      heldAtMs: draft.ctx.now,
    },
  });
}

/** A step's priority when its definition names none (the middle of 1–5). */
export const DEFAULT_PRIORITY = 3;
const MAX_PRIORITY = 5;

/**
 * A step reached a terminal outcome. Delegation steps report back to their origin; workflow steps that fail
 * fail the task. Replies the step had received but not yet handed to its handler are orphans now.
 */
export function finishStep(draft: Draft, stepId: string, outcome: { ok: boolean; output: unknown; error: StepError | null }): void {
  const step = draft.step(stepId)!;
  releaseCheckpoint(draft, stepId, `step ${stepId} ${outcome.ok ? "completed" : "failed"} before its handler took this reply`);
  draft.moveStep(stepId, outcome.ok ? "complete" : "fail", {
    output: outcome.ok ? outcome.output : null,
    error: outcome.ok ? null : outcome.error,
    dueAtMs: null,
    approvalId: null,
  });
  if (step.kind === "delegation") {
    replyArrived(draft, stepId);
  } else if (!outcome.ok) {
    draft.failTask(stepId, outcome.error ?? { code: "INTERNAL", message: "step failed" });
  }
}

/**
 * The attempt that asked the sub-queries is over (finished, retried or timed out): its checkpoint goes, and the
 * replies it had received but not yet been handed are recorded as orphans. Replies still to come find no awaiting
 * origin and are recorded as orphans when they arrive.
 */
export function releaseCheckpoint(draft: Draft, stepId: string, why: string): void {
  const step = draft.step(stepId)!;
  if (!step.checkpoint) return;
  for (const delegateStepId of step.checkpoint.arrived) recordOrphan(draft, delegateStepId, why);
  draft.updateStep(stepId, { checkpoint: null });
}

export function recordOrphan(draft: Draft, delegateStepId: string, why: string): void {
  const info = draft.step(delegateStepId)!.delegation!;
  draft.audit({
    action: "reply",
    actor: "coordinator",
    destination: draft.step(info.originStepId)?.destination ?? "",
    verdict: "orphaned",
    rule: "builtin:orphan",
    reason: `reply to ${info.originStepId} (attempt ${info.originAttempt}, correlation id ${info.correlationId}) dropped: ${why}`,
    payloadHash: "",
    cost: 0,
    stepId: delegateStepId,
    envelopeId: draft.ctx.newId(),
  });
  draft.log("warn", "reply has no waiting origin; recorded as an orphan", { stepId: delegateStepId, originStepId: info.originStepId, why });
  draft.effects.push({ type: "count", metric: "orphan_reply" });
}

/**
 * A delegation step finished: its REPLY joins the origin's queue, in the order results are applied, and goes out
 * when no turn of the origin runs. Never throws on an unknown or moved-on origin (seed 000: own it, don't strand
 * it): the reply is recorded as an orphan instead.
 */
function replyArrived(draft: Draft, delegateStepId: string): void {
  const info = draft.step(delegateStepId)!.delegation!;
  const origin = draft.step(info.originStepId);
  const checkpoint = origin?.checkpoint;
  const awaited =
    origin !== undefined &&
    checkpoint != null &&
    origin.attempt === info.originAttempt &&
    (origin.status === "dispatched" || origin.status === "waiting" || origin.status === "parked") &&
    checkpoint.awaiting.some((a) => a.delegateStepId === delegateStepId) &&
    !checkpoint.arrived.includes(delegateStepId);
  if (info.queryDepth >= MAX_DELEGATION_DEPTH) {
    draft.log("error", "delegation depth ceiling reached: no reply delivered", {
      stepId: delegateStepId,
      originStepId: info.originStepId,
      depth: info.queryDepth,
      ceiling: MAX_DELEGATION_DEPTH,
    });
    draft.effects.push({ type: "count", metric: "delegation_depth_exceeded" });
    // Never delivered: the origin stops awaiting it, so `outstanding` does not promise a reply that cannot come.
    if (awaited) draft.updateStep(origin.stepId, { checkpoint: { ...checkpoint, awaiting: checkpoint.awaiting.filter((a) => a.delegateStepId !== delegateStepId) } });
    return;
  }
  if (!awaited) {
    const why = !origin
      ? "the origin step is unknown"
      : origin.attempt !== info.originAttempt
        ? `the origin is at attempt ${origin.attempt}`
        : `the origin is ${origin.status} and no longer awaits it`;
    recordOrphan(draft, delegateStepId, why);
    return;
  }
  draft.updateStep(origin.stepId, { checkpoint: { ...checkpoint, arrived: [...checkpoint.arrived, delegateStepId] } });
  deliverNextReply(draft, origin.stepId);
}

/**
 * Sends the origin the first reply of its queue, governed as `reply`, when no turn of the origin runs (it is
 * `waiting`; or parked on that reply's approval, with `approvedBy`). The REPLY carries the checkpoint state and the
 * correlation ids still awaited after it; the origin is `dispatched` until its turn stands down or finishes.
 */
export function deliverNextReply(draft: Draft, originStepId: string, approvedBy?: { approvalId: string; actor: string }): void {
  const origin = draft.step(originStepId)!;
  const checkpoint = origin.checkpoint;
  if (!checkpoint || checkpoint.arrived.length === 0 || origin.status !== (approvedBy ? "parked" : "waiting")) return;
  const delegateStepId = checkpoint.arrived[0]!;
  const delegate = draft.step(delegateStepId)!;
  const info = delegate.delegation!;
  const stillAwaited = checkpoint.awaiting.filter((a) => a.delegateStepId !== delegateStepId);

  const envelopeId = draft.ctx.newId();
  const payload = {
    input: stepInput(draft, origin),
    state: checkpoint.state,
    depth: origin.depth,
    turn: origin.turns,
    outstanding: stillAwaited.map((a) => a.correlationId),
    ...replyToField(draft),
  };
  const payloadJson = replyPayloadJson(payload, delegate, draft.ctx.maxPayloadBytes);
  const payloadHash = draft.ctx.hashPayload(payloadJson);
  const facts = hopFacts(draft, origin, "reply", origin.destination, 0);
  const verdict: Verdict = approvedBy ? approvedVerdict(draft.ctx.govern(facts), approvedBy) : draft.ctx.govern(facts);
  draft.effects.push({ type: "hop", hop: { facts, verdict, envelopeId } });
  draft.audit({
    action: "reply",
    actor: "coordinator",
    destination: origin.destination,
    verdict: verdict.verdict,
    rule: verdict.rule,
    // The row sits on the origin step: name which answer it carries.
    reason: `${verdict.reason}; the reply of ${delegateStepId} (correlation id ${info.correlationId})`,
    payloadHash,
    cost: 0,
    stepId: origin.stepId,
    envelopeId,
  });
  if (verdict.verdict === "requires_approval") {
    // Replies that arrive meanwhile queue behind this one: the approval holds the head of the queue.
    const approvalId = draft.ctx.newId();
    draft.moveStep(origin.stepId, "await_approval", { approvalId, dueAtMs: null });
    draft.effects.push({
      type: "open_approval",
      approval: { id: approvalId, orgId: draft.task.orgId, taskId: draft.task.id, stepId: origin.stepId, action: "reply", destination: origin.destination, rule: verdict.rule, reason: verdict.reason, cost: 0, expiresAtMs: draft.ctx.now + draft.ctx.approvalTtlMs },
    });
    return;
  }
  if (verdict.verdict === "deny") {
    // The denied reply is accounted by its own audit row; the rest of the queue are orphans of the failed step,
    // whose attempt ends without a RESULT: its reserved estimate goes back.
    draft.releaseEstimate(origin.stepId);
    draft.updateStep(origin.stepId, { checkpoint: { ...checkpoint, arrived: checkpoint.arrived.slice(1) } });
    finishStep(draft, origin.stepId, { ok: false, output: null, error: errorFor(verdict) });
    return;
  }
  // The state travels in the REPLY; the next stand-down brings the next one.
  draft.moveStep(origin.stepId, "dispatch", {
    approvalId: null,
    checkpoint: { state: null, awaiting: stillAwaited, arrived: checkpoint.arrived.slice(1) },
    dueAtMs: draft.ctx.now + stepTimeoutMs(draft, origin),
  });
  draft.effects.push({
    type: "send",
    envelope: {
      id: envelopeId,
      kind: "REPLY",
      orgId: draft.task.orgId,
      taskId: draft.task.id,
      stepId: origin.stepId,
      attempt: origin.attempt,
      destination: origin.destination,
      clearanceFloor: origin.clearance,
      delegationDepth: info.queryDepth + 1,
      correlationId: info.correlationId,
      payloadJson,
      turn: origin.turns,
      status: delegate.status === "completed" ? "ok" : "error",
      error: delegate.status === "completed" ? null : delegate.error,
      sourceStepId: delegateStepId,
      resultRef: `step:${draft.task.id}/${delegateStepId}`,
      createdAtMs: draft.ctx.now,
    },
  });
}
