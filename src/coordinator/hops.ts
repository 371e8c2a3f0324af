/**
 * Governed hops out of the coordinator: dispatching a step's work and delivering a delegate's REPLY. Each hop
 * passes the choke-point in order — payload cap, governor (which clamps clearance and checks budget), audit,
 * cost accrual — and then sends, parks for approval, or fails closed.
 */
import { parseDestination, type ActionType, type HopFacts, type Verdict } from "../domain.js";
import { viewAddress } from "../origin/reply-address.js";
import { Draft, roundCost } from "./draft.js";
import { MAX_DELEGATION_DEPTH, type EnvelopeSpec, type StepError, type StepRecord } from "./model.js";

const encoder = new TextEncoder();

/** A step's input: the task input plus the outputs of the steps it needs; for delegations, the query payload. */
export function stepInput(draft: Draft, step: StepRecord): unknown {
  if (step.kind === "delegation") return step.delegation?.payload ?? null;
  const def = draft.workflow.steps.find((s) => s.id === step.stepId);
  const steps: Record<string, unknown> = {};
  for (const need of def?.needs ?? []) steps[need] = draft.step(need)?.output ?? null;
  return { task: draft.task.input, steps };
}

/**
 * What a handler sees of the task's reply address (`work.replyTo`): kind and display, never a credential. Absent
 * from the payload when the task has none, so the WORK of every other task is unchanged.
 */
function replyToField(draft: Draft): { replyTo?: { kind: string; display: string } } {
  const view = viewAddress(draft.task.replyTo);
  return view ? { replyTo: view } : {};
}

function stepTimeoutMs(draft: Draft, step: StepRecord): number {
  const def = draft.workflow.steps.find((s) => s.id === step.stepId);
  return def?.timeoutMs ?? draft.ctx.defaultStepTimeoutMs;
}

function actionFor(step: StepRecord): ActionType {
  if (step.destination.startsWith("foreign:")) return "a2a_egress";
  return step.kind === "delegation" ? "sub_query" : "dispatch";
}

function errorFor(verdict: Verdict): StepError {
  const code =
    verdict.rule === "builtin:clearance" ? "CLEARANCE_DENIED" : verdict.rule === "builtin:budget" || verdict.rule === "builtin:daily-budget" ? "BUDGET_EXCEEDED" : "POLICY_DENIED";
  return { code, message: `${verdict.reason} (rule ${verdict.rule})`, retryable: false };
}

function hopFacts(draft: Draft, step: StepRecord, action: ActionType, destination: string, cost: number): HopFacts {
  const workflowStep = draft.workflow.steps.find((s) => s.id === step.stepId);
  return {
    action,
    orgId: draft.task.orgId,
    taskId: draft.task.id,
    stepId: step.stepId,
    workflow: `${draft.task.workflowName}@${draft.task.workflowVersion}`,
    destination: parseDestination(destination) ?? { kind: "role", id: destination },
    clearance: step.clearance,
    cost,
    taskCost: draft.task.cost,
    taskBudget: draft.task.budget,
    approvalHint: workflowStep?.approval ?? false,
    delegationDepth: step.depth,
    tenantDailyCost: draft.ctx.tenant.dailyCost + (draft.task.cost - draft.base.task.cost),
    tenantDailyBudget: draft.ctx.tenant.dailyBudget,
    egressEnabled: draft.ctx.tenant.egressEnabled,
  };
}

/**
 * Governs and (on allow) sends the next attempt of `step`. With `approvedBy`, a human's approval satisfies a
 * `requires_approval` verdict — but the governor still runs, so a deny that holds now (egress switched off, a
 * budget exceeded, a tightened policy) still fails the hop closed.
 * approved this exact hop.
 */
export function dispatchStep(draft: Draft, stepId: string, approvedBy?: { approvalId: string; actor: string }): void {
  const step = draft.step(stepId)!;
  const action = actionFor(step);
  const cost = draft.estimateOf(step);
  const envelopeId = draft.ctx.newId();
  // `turn` is echoed by a QUERY from this turn, so a redelivered old QUERY can be told apart.
  const payloadJson = JSON.stringify({ input: stepInput(draft, step), turn: step.delegations, ...replyToField(draft) });
  const payloadHash = draft.ctx.hashPayload(payloadJson);
  const facts = hopFacts(draft, step, action, step.destination, cost);

  let verdict: Verdict;
  if (encoder.encode(payloadJson).byteLength > draft.ctx.maxPayloadBytes) {
    verdict = { verdict: "deny", rule: "builtin:payload-size", reason: `step input exceeds ${draft.ctx.maxPayloadBytes} bytes` };
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
    draft.updateStep(stepId, { status: "parked", approvalId, dueAtMs: null });
    draft.effects.push({
      type: "open_approval",
      approval: { id: approvalId, orgId: draft.task.orgId, taskId: draft.task.id, stepId, action, destination: step.destination, rule: verdict.rule, reason: verdict.reason, cost, expiresAtMs: draft.ctx.now + draft.ctx.approvalTtlMs },
    });
    return;
  }
  if (verdict.verdict === "deny") {
    const error = verdict.rule === "builtin:payload-size" ? { code: "PAYLOAD_TOO_LARGE", message: verdict.reason, retryable: false } : errorFor(verdict);
    finishStep(draft, stepId, { ok: false, error, output: null });
    return;
  }

  const attempt = step.attempt + 1;
  draft.accrue(cost);
  draft.updateStep(stepId, {
    status: "dispatched",
    attempt,
    approvalId: null,
    cost: roundCost(step.cost + cost),
    dueAtMs: draft.ctx.now + stepTimeoutMs(draft, step),
    error: null,
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
    createdAtMs: draft.ctx.now,
  };
  draft.effects.push(action === "a2a_egress" ? { type: "foreign_dispatch", envelope } : { type: "send", envelope });
}

/**
 * A step reached a terminal outcome. Delegation steps report back to their origin; workflow steps that fail
 * fail the task.
 */
export function finishStep(draft: Draft, stepId: string, outcome: { ok: boolean; output: unknown; error: StepError | null }): void {
  const step = draft.step(stepId)!;
  draft.updateStep(stepId, {
    status: outcome.ok ? "completed" : "failed",
    output: outcome.ok ? outcome.output : null,
    error: outcome.ok ? null : outcome.error,
    dueAtMs: null,
    approvalId: null,
  });
  if (step.kind === "delegation") {
    deliverReply(draft, stepId);
  } else if (!outcome.ok) {
    draft.failTask(stepId, outcome.error ?? { code: "INTERNAL", message: "step failed" });
  }
}

/**
 * Sends the REPLY for a finished delegation to its origin, governed as `reply`. Never throws on an unknown or
 * moved-on origin (seed 000: own it, don't strand it): it logs and counts instead.
 */
export function deliverReply(draft: Draft, delegateStepId: string, approvedBy?: { approvalId: string; actor: string }): void {
  const delegate = draft.step(delegateStepId)!;
  const info = delegate.delegation!;
  if (info.queryDepth >= MAX_DELEGATION_DEPTH) {
    draft.log("error", "delegation depth ceiling reached: no reply delivered", {
      stepId: delegateStepId,
      originStepId: info.originStepId,
      depth: info.queryDepth,
      ceiling: MAX_DELEGATION_DEPTH,
    });
    draft.effects.push({ type: "count", metric: "delegation_depth_exceeded" });
    return;
  }
  const origin = draft.step(info.originStepId);
  if (
    !origin ||
    origin.status !== (approvedBy ? "parked" : "waiting") ||
    origin.attempt !== info.originAttempt ||
    origin.checkpoint?.delegateStepId !== delegateStepId
  ) {
    draft.log("warn", "reply has no waiting origin; dropped", {
      stepId: delegateStepId,
      originStepId: info.originStepId,
      originStatus: origin?.status ?? "unknown",
    });
    draft.effects.push({ type: "count", metric: "orphan_reply" });
    return;
  }

  const envelopeId = draft.ctx.newId();
  const payloadJson = JSON.stringify({ input: stepInput(draft, origin), state: origin.checkpoint.state, depth: origin.depth, turn: origin.delegations, ...replyToField(draft) });
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
    reason: verdict.reason,
    payloadHash,
    cost: 0,
    stepId: origin.stepId,
    envelopeId,
  });
  if (verdict.verdict === "requires_approval") {
    const approvalId = draft.ctx.newId();
    draft.updateStep(origin.stepId, { status: "parked", approvalId, dueAtMs: null });
    draft.effects.push({
      type: "open_approval",
      approval: { id: approvalId, orgId: draft.task.orgId, taskId: draft.task.id, stepId: origin.stepId, action: "reply", destination: origin.destination, rule: verdict.rule, reason: verdict.reason, cost: 0, expiresAtMs: draft.ctx.now + draft.ctx.approvalTtlMs },
    });
    return;
  }
  if (verdict.verdict === "deny") {
    finishStep(draft, origin.stepId, { ok: false, output: null, error: errorFor(verdict) });
    return;
  }
  // The checkpoint travels in the REPLY; clearing it keeps a later approval on this step from reading as a reply.
  draft.updateStep(origin.stepId, { status: "dispatched", approvalId: null, checkpoint: null, dueAtMs: draft.ctx.now + stepTimeoutMs(draft, origin) });
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
      status: delegate.status === "completed" ? "ok" : "error",
      error: delegate.status === "completed" ? null : delegate.error,
      sourceStepId: delegateStepId,
      resultRef: `step:${draft.task.id}/${delegateStepId}`,
      createdAtMs: draft.ctx.now,
    },
  });
}

export { stepTimeoutMs };

/** The verdict of a hop a human approved: an approval answers requires_approval, never a deny. */
export function approvedVerdict(current: Verdict, approvedBy: { approvalId: string; actor: string }): Verdict {
  if (current.verdict === "deny") return current;
  return { verdict: "allow", rule: `approval:${approvedBy.approvalId}`, reason: `approved by ${approvedBy.actor}` };
}
