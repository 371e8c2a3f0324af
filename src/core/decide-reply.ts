/**
 * The `reply` verb's decisions (issue 9), pure like the rest of decide: who may ask, the refusals decided before
 * any dial, the governor (action `origin_reply`), and an approval of a parked reply. The I/O facts (recorded
 * replies, the idempotency key, the selected connection, the secret scan, the token bucket) were gathered by the
 * shell under the task lock and arrive in `ctx.reply`.
 *
 * The delivery chose the place (the task's immutable reply address), the tenant chose the credential (the
 * connection selection), the worker chooses only the words: nothing in the event can name an address or a
 * connection. Audit rows carry the text's sha256, the address display and the connection id — never the text.
 */
import { parseDestination, type Destination, type HopFacts, type Verdict } from "../domain.js";
import { displayAddress } from "./reply-address.js";
import {
  DEFAULT_REPLY_LIMITS,
  type BucketState,
  type ParkedReplyFacts,
  type ReplyRecord,
  type ReplyRefusalCode,
  type ReplyRequestFacts,
} from "./reply-types.js";
import { Draft } from "./draft.js";
import { approvedVerdict } from "./hop-facts.js";
import { EXPIRY_ACTOR, type CoordinatorEvent, type DecideContext, type EventSender, type TaskState } from "./model.js";

type ReplyRequest = Extract<CoordinatorEvent, { type: "reply_request" }>;
type ApprovalDecided = Extract<CoordinatorEvent, { type: "approval_decided" }>;

const encoder = new TextEncoder();

/**
 * The governor's destination for a reply the tenant posts through the API or CLI (no step asked): a policy rule
 * can match it as `role:api`. A worker's reply is governed with its own step's destination.
 */
export const API_REPLY_DESTINATION: Destination = { kind: "role", id: "api" };

/** Who the reply row and the audit row name: `worker:role:NAME`, or the API caller as recorded. */
export function replyActor(sender: EventSender): string {
  switch (sender.kind) {
    case "queue":
      return `worker:${sender.endpoint}`;
    case "api":
      return sender.actor;
    case "gateway":
      return `gateway:${sender.agent}`;
    case "coordinator":
      return "coordinator";
  }
}

/**
 * Why this request is refused outright — dead-lettered, no row written — or undefined. (The destination check — a
 * worker only for a step dispatched to its own queue — ran first in sender-guard.ts; the identity checks here
 * repeat it so no other sender can ever reach `decideReplyRequest` and write a row on someone else's task.) The
 * tenant (API) replies while the task runs or within the grace window after it ended; outside it the refusal
 * stays here, because TaskService.reply answers it synchronously (FAILED_PRECONDITION) and nobody polls for a row.
 * The step's own worker asking at the wrong time is NOT refused here: see `replyNotAllowed`.
 */
export function refuseReplyRequest(state: TaskState, event: ReplyRequest, ctx: DecideContext): string | undefined {
  if (event.sender.kind === "api") {
    const task = state.task;
    return task.status === "running" || task.status === "parked" ? undefined : graceOver(state, ctx);
  }
  if (event.sender.kind !== "queue") return `a reply from ${replyActor(event.sender)}: only the step's worker or the tenant may reply`;
  const step = event.stepId === null ? undefined : state.steps.get(event.stepId);
  if (!step) return `a reply from ${event.sender.endpoint} names no step of task ${state.task.id}`;
  if (step.destination !== event.sender.endpoint) return `a reply from ${event.sender.endpoint} for step ${step.stepId}, whose destination is ${step.destination}`;
  return undefined;
}

/**
 * Why the step's own worker may not reply NOW, or undefined. It replies for the step's CURRENT attempt while the
 * step is in flight, or after the task ended within the grace window. A refusal here is recorded as a refused row
 * (`reply_not_allowed`): the worker's `ctx.reply` polls for the row its request made, and without one it would wait
 * out its whole deadline and then answer `outcome_pending` — a lie, since nothing will ever be posted.
 */
export function replyNotAllowed(state: TaskState, event: ReplyRequest, ctx: DecideContext): string | undefined {
  if (event.sender.kind !== "queue" || event.stepId === null) return undefined;
  const step = state.steps.get(event.stepId);
  if (!step) return undefined; // refused by refuseReplyRequest
  const task = state.task;
  if (step.attempt !== event.attempt) {
    return `step ${step.stepId} is at attempt ${step.attempt}; attempt ${event.attempt} was retried or timed out and may no longer reply`;
  }
  if (task.status === "running" || task.status === "parked") {
    if (step.status === "dispatched" || step.status === "waiting") return undefined;
    return `step ${step.stepId} is ${step.status}, not in flight: its worker replies only while the step runs, or within the grace window after the task ends`;
  }
  return graceOver(state, ctx);
}

/** Why an ended task takes no more replies, or undefined within the grace window. */
function graceOver(state: TaskState, ctx: DecideContext): string | undefined {
  const graceMs = (ctx.replyLimits ?? DEFAULT_REPLY_LIMITS).graceMs;
  const task = state.task;
  return task.finishedAtMs !== null && ctx.now - task.finishedAtMs <= graceMs
    ? undefined
    : `task ${task.id} is ${task.status} and ended more than ${graceMs} ms ago: replies are accepted up to ${graceMs} ms after a task ends`;
}

/**
 * Decides a reply request whose sender passed `refuseReplyRequest`: a refused row (`reply_not_allowed` first, then
 * the documented refusals), a parked row, or a pending one. Returns why it was ignored, if it was.
 */
export function decideReplyRequest(draft: Draft, event: ReplyRequest): string | undefined {
  const facts = draft.ctx.reply;
  if (facts?.kind !== "request") return "no reply facts were gathered"; // a shell bug; changes nothing
  // Checked before the idempotency key: a request that may not be made at all is answered as such, not with the
  // outcome of an earlier row that happens to share its key.
  const notAllowed = replyNotAllowed(draft.base, event, draft.ctx);
  // A repeat: the first row with this key stands (whatever its state) and the caller finds it by the key.
  if (facts.duplicate && !notAllowed) return "a reply with this idempotency key is recorded already";
  const limits = draft.ctx.replyLimits ?? DEFAULT_REPLY_LIMITS;
  const address = draft.task.replyTo;
  const actor = replyActor(event.sender);
  const now = draft.ctx.now;
  const row: ReplyRecord = {
    id: draft.ctx.newId(),
    orgId: draft.task.orgId,
    taskId: draft.task.id,
    stepId: event.stepId,
    attempt: event.stepId === null ? null : event.attempt,
    requestId: event.requestId,
    actor,
    idempotencyKey: event.idempotencyKey,
    connectionId: facts.connection?.ok ? facts.connection.connection.id : null,
    state: "pending",
    approvalId: null,
    code: null,
    message: null,
    addressKind: address?.kind ?? null,
    addressDisplay: address ? displayAddress(address) : null,
    text: event.text,
    textSha256: draft.ctx.hashPayload(event.text),
    nextAttemptAtMs: null,
  };

  if (notAllowed) {
    refuse(draft, event, row, "reply_not_allowed", notAllowed, "builtin:reply_not_allowed");
    return undefined;
  }
  const refusal = firstRefusal(draft, event, facts);
  if (refusal) {
    refuse(draft, event, row, refusal.code, refusal.message, `builtin:${refusal.code}`);
    return undefined;
  }
  const tokens = refilled(facts.bucket, now, limits.ratePerMinute, limits.burst);
  if (tokens < 1) {
    const message = `more than ${limits.ratePerMinute} replies a minute (burst ${limits.burst}) from ${actor}`;
    refuse(draft, event, row, "rate_limited", message, "builtin:rate_limited");
    return undefined;
  }
  draft.effects.push({ type: "reply_bucket", orgId: draft.task.orgId, actor, tokens: tokens - 1, atMs: now });

  const hop = replyHopFacts(draft, event.stepId, limits.cost);
  const verdict = draft.ctx.govern(hop);
  draft.effects.push({ type: "hop", hop: { facts: hop, verdict, envelopeId: row.id } });
  if (verdict.verdict === "deny") {
    refuse(draft, event, row, "policy_denied", `${verdict.reason} (rule ${verdict.rule})`, verdict.rule, verdict);
    return undefined;
  }
  auditReply(draft, event.eventId, row, verdict, verdict.verdict === "allow" ? limits.cost : 0);
  if (verdict.verdict === "requires_approval") {
    const approvalId = draft.ctx.newId();
    draft.effects.push({
      type: "open_approval",
      approval: {
        id: approvalId,
        orgId: draft.task.orgId,
        taskId: draft.task.id,
        stepId: event.stepId ?? "",
        action: "origin_reply",
        destination: row.addressDisplay ?? "",
        rule: verdict.rule,
        reason: verdict.reason,
        cost: limits.cost,
        expiresAtMs: now + draft.ctx.approvalTtlMs,
        replyId: row.id,
      },
    });
    draft.effects.push({ type: "record_reply", reply: { ...row, state: "parked", approvalId } });
    return undefined;
  }
  draft.accrue(limits.cost);
  draft.effects.push({ type: "record_reply", reply: { ...row, state: "pending", nextAttemptAtMs: now } });
  return undefined;
}

/**
 * A parked reply's approval was decided. Approved: the governor runs again (a deny that holds now — a tightened
 * policy, an exceeded budget — still refuses, and so does REPLY_ENABLED switched off), then the row is pending.
 * Denied or expired: the row is refused. Either way audited, like a step's approval.
 */
export function decideReplyApproval(draft: Draft, event: ApprovalDecided, facts: ParkedReplyFacts): string | undefined {
  const reply = facts.reply;
  if (reply.state !== "parked") return "the reply is not parked";
  const limits = draft.ctx.replyLimits ?? DEFAULT_REPLY_LIMITS;
  draft.audit({
    action: "approval",
    actor: event.actor,
    destination: reply.addressDisplay ?? "",
    verdict: event.approve ? "approved" : "denied",
    rule: `approval:${event.approvalId}`,
    reason: event.reason || (event.approve ? "approved" : "denied"),
    payloadHash: reply.textSha256,
    cost: 0,
    stepId: reply.stepId ?? "",
    envelopeId: event.eventId,
  });
  draft.effects.push({ type: "close_approval", approvalId: event.approvalId, approved: event.approve, actor: event.actor, reason: event.reason });
  const settle = (state: "pending" | "refused", code: ReplyRefusalCode | null, message: string | null) => {
    draft.effects.push({
      type: "update_reply",
      update: { id: reply.id, orgId: draft.task.orgId, state, code, message, nextAttemptAtMs: state === "pending" ? draft.ctx.now : null },
    });
    if (state === "refused") draft.effects.push({ type: "count", metric: "origin_reply", labels: { status: "refused", code: code ?? "" } });
  };
  if (!event.approve) {
    const expired = event.actor === EXPIRY_ACTOR;
    settle("refused", expired ? "approval_expired" : "approval_denied", `${expired ? "approval expired" : `approval denied by ${event.actor}`}${event.reason ? `: ${event.reason}` : ""}`);
    return undefined;
  }
  const hop = replyHopFacts(draft, reply.stepId, limits.cost);
  const verdict: Verdict = draft.ctx.tenant.replyEnabled
    ? approvedVerdict(draft.ctx.govern(hop), { approvalId: event.approvalId, actor: event.actor })
    : { verdict: "deny", rule: "builtin:reply_disabled", reason: "replies are switched off for this tenant (REPLY_ENABLED)" };
  draft.effects.push({ type: "hop", hop: { facts: hop, verdict, envelopeId: reply.id } });
  const allowed = verdict.verdict === "allow";
  draft.audit({
    action: "origin_reply",
    actor: "coordinator",
    destination: reply.addressDisplay ?? "",
    verdict: verdict.verdict,
    rule: verdict.rule,
    reason: `${verdict.reason}; reply ${reply.id}, connection ${reply.connectionId ?? "none"}`,
    payloadHash: reply.textSha256,
    cost: allowed ? limits.cost : 0,
    stepId: reply.stepId ?? "",
    envelopeId: event.eventId,
  });
  if (!allowed) {
    settle("refused", verdict.rule === "builtin:reply_disabled" ? "reply_disabled" : "policy_denied", `${verdict.reason} (rule ${verdict.rule})`);
    return undefined;
  }
  draft.accrue(limits.cost);
  settle("pending", null, null);
  return undefined;
}

/** The first refusal that applies, in the documented order (flag, address, text, cap, connection, secret). */
function firstRefusal(draft: Draft, event: ReplyRequest, facts: ReplyRequestFacts): { code: ReplyRefusalCode; message: string } | undefined {
  const limits = draft.ctx.replyLimits ?? DEFAULT_REPLY_LIMITS;
  if (!draft.ctx.tenant.replyEnabled) return { code: "reply_disabled", message: "replies are switched off for this tenant (REPLY_ENABLED)" };
  if (!draft.task.replyTo) return { code: "no_reply_address", message: `task ${draft.task.id} has no reply address (it did not come from a verified delivery that names one)` };
  const bytes = encoder.encode(event.text).byteLength;
  if (bytes === 0) return { code: "text_too_long", message: "the reply text is empty" };
  if (bytes > limits.maxTextBytes) return { code: "text_too_long", message: `the reply text is ${bytes} bytes, over the ${limits.maxTextBytes}-byte limit` };
  if (facts.recordedCount >= limits.taskCap) return { code: "task_cap_reached", message: `task ${draft.task.id} has made ${facts.recordedCount} replies, its cap is ${limits.taskCap}` };
  if (facts.connection && !facts.connection.ok) return { code: facts.connection.code, message: facts.connection.message };
  if (facts.secretRule) return { code: "secret_detected", message: `the text matches the secret rule ${facts.secretRule}; nothing was posted` };
  return undefined;
}

/** Records a refused row (without the words: a refused text, a secret above all, is not kept) and its audit row. */
function refuse(draft: Draft, event: ReplyRequest, row: ReplyRecord, code: ReplyRefusalCode, message: string, rule: string, verdict?: Verdict): void {
  auditReply(draft, event.eventId, row, verdict ?? { verdict: "deny", rule, reason: message }, 0);
  draft.effects.push({ type: "record_reply", reply: { ...row, state: "refused", code, message, text: "" } });
  draft.effects.push({ type: "count", metric: "origin_reply", labels: { status: "refused", code } });
}

function auditReply(draft: Draft, eventId: string, row: ReplyRecord, verdict: Verdict, cost: number): void {
  draft.audit({
    action: "origin_reply",
    actor: row.actor,
    destination: row.addressDisplay ?? "(no reply address)",
    verdict: verdict.verdict,
    rule: verdict.rule,
    reason: `${verdict.reason}; reply ${row.id}, connection ${row.connectionId ?? "none"}`,
    payloadHash: row.textSha256,
    cost,
    stepId: row.stepId ?? "",
    envelopeId: eventId,
  });
}

/** The bucket's tokens now: refilled at `ratePerMinute`, never above `burst`; a bucket never used is full. */
export function refilled(bucket: BucketState | null, nowMs: number, ratePerMinute: number, burst: number): number {
  if (!bucket) return burst;
  const elapsed = Math.max(0, nowMs - bucket.updatedAtMs);
  return Math.min(burst, bucket.tokens + (elapsed * ratePerMinute) / 60_000);
}

function replyHopFacts(draft: Draft, stepId: string | null, cost: number): HopFacts {
  const step = stepId === null ? undefined : draft.step(stepId);
  return {
    action: "origin_reply",
    orgId: draft.task.orgId,
    taskId: draft.task.id,
    stepId: stepId ?? "",
    workflow: `${draft.task.workflowName}@${draft.task.workflowVersion}`,
    destination: (step && parseDestination(step.destination)) || API_REPLY_DESTINATION,
    clearance: step?.clearance ?? 0,
    cost,
    taskCost: draft.task.cost,
    taskBudget: draft.task.budget,
    approvalHint: false,
    delegationDepth: step?.depth ?? 0,
    tenantDailyCost: draft.ctx.tenant.dailyCost + (draft.task.cost - draft.base.task.cost),
    tenantDailyBudget: draft.ctx.tenant.dailyBudget,
    egressEnabled: draft.ctx.tenant.egressEnabled,
  };
}
