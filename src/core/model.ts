/**
 * The coordinator's state and vocabulary: what a task and its steps look like to the decision function, the
 * events it reacts to and the effects it asks the shell to carry out. Types only.
 */
import type { ActionType, AuditEntry, HopFacts, StepDefinition, TenantFacts, Verdict, WorkflowDefinition } from "../domain.js";
import type { ReplyAddress } from "./reply-address.js";
import type { ReplyEventFacts, ReplyLimits, ReplyRecord, ReplyUpdate } from "./reply-types.js";
import type { AdmissionCheck } from "./admission.js";
import type { HeldStep } from "./held-step.js";

export type TaskStatus = "running" | "parked" | "completed" | "failed" | "cancelled";
/** `held`: ready, but held back in Postgres by a dispatch limit until the releaser lets it go (src/fairness/). */
export type StepStatus = "pending" | "held" | "dispatched" | "retrying" | "parked" | "waiting" | "completed" | "failed" | "cancelled";

export const TERMINAL_STEP_STATUSES: readonly StepStatus[] = ["completed", "failed", "cancelled"];
export const TERMINAL_TASK_STATUSES: readonly TaskStatus[] = ["completed", "failed", "cancelled"];

export interface StepError {
  code: string;
  message: string;
  retryable?: boolean;
}

export interface TaskRecord {
  id: string;
  orgId: string;
  workflowName: string;
  workflowVersion: number;
  input: unknown;
  status: TaskStatus;
  budget: number | null;
  cost: number;
  error: (StepError & { stepId?: string }) | null;
  finishedAtMs: number | null;
  /**
   * Where an answer to the conversation the task came from may be posted (issue 9), from the verified delivery
   * that started it; null for every other task. Read from `tasks.reply_to`, never written back (immutable).
   */
  replyTo: ReplyAddress | null;
}

/** The actor that denies an approval nobody decided by its deadline. */
export const EXPIRY_ACTOR = "system:expiry";

/** Present on delegation steps: who asked, and what. */
export interface DelegationInfo {
  originStepId: string;
  originAttempt: number;
  correlationId: string;
  /** The QUERY's delegation depth (the origin work's depth). The REPLY carries depth + 1. */
  queryDepth: number;
  payload: unknown;
}

/** A sub-query the origin's attempt asked and has not yet been handed the REPLY of. */
export interface AwaitedReply {
  delegateStepId: string;
  correlationId: string;
}

/**
 * Present on a step whose turn stood down on a delegation (issue 14: fan-out), from the first QUERY of an attempt
 * until the step finishes or the attempt ends. While a turn runs (`dispatched`) it holds what that turn does not
 * see yet; while the step is `waiting` or parked on a REPLY's approval, also the state to hand back.
 */
export interface Checkpoint {
  /** The state the last stand-down returned; handed to the next resumed turn. */
  state: unknown;
  /** Sub-queries whose REPLY the handler has not been handed yet, in the order they were asked. */
  awaiting: AwaitedReply[];
  /**
   * Delegate step ids (each also in `awaiting`) whose result the coordinator has applied but not yet handed to the
   * handler, in the order it received them: the next REPLYs, first in first out. A REPLY is sent only while no turn
   * of the step runs, so the head goes out when the running turn stands down (or at once when the step waits).
   */
  arrived: string[];
}

/** Bounds of fan-out delegation (config.coordinator; SWITCHYARD_DELEGATION_MAX_*). */
export interface DelegationLimits {
  /** Sub-queries a step may have outstanding at once. */
  maxOutstanding: number;
  /** Sub-queries one attempt of a step may ask in all. */
  maxPerAttempt: number;
}

/** Kept equal to config.ts's defaults. */
export const DEFAULT_DELEGATION_LIMITS: DelegationLimits = { maxOutstanding: 16, maxPerAttempt: 64 };

export interface StepRecord {
  taskId: string;
  stepId: string;
  orgId: string;
  kind: "workflow" | "delegation";
  status: StepStatus;
  /** `role:NAME`, `team:NAME` or `foreign:KEY`. */
  destination: string;
  /** Attempts dispatched so far; the current attempt's number when dispatched. */
  attempt: number;
  /** Delegation depth of this step's work (0 for workflow steps). */
  depth: number;
  /** Effective clearance floor of the step's hops. */
  clearance: number;
  /** Timeout (dispatched / waiting) or next retry (retrying), ms since epoch. */
  dueAtMs: number | null;
  /** Actual cost of the completed attempt, or the estimate reserved for the attempt in flight. */
  cost: number;
  output: unknown;
  error: StepError | null;
  approvalId: string | null;
  delegation: DelegationInfo | null;
  checkpoint: Checkpoint | null;
  /** How many sub-queries this step has asked over all its attempts (names the next delegation step `.dN`). */
  delegations: number;
  /**
   * Turns of this step that stood down (a QUERY accepted: a delegation or `awaitMore`), over all its attempts. The
   * WORK or REPLY that starts a turn carries it, and the turn's QUERY or RESULT echoes it: an outcome of any other
   * turn is stale (a redelivered entry re-run after its turn already stood down).
   */
  turns: number;
  /** The key group it counts in while dispatched (src/core/concurrency-key.ts); absent: none. */
  concurrencyKey?: string | null;
}

/** A workflow step as it is before its task starts. */
export function pendingWorkflowStep(taskId: string, orgId: string, def: StepDefinition): StepRecord {
  return {
    taskId,
    stepId: def.id,
    orgId,
    kind: "workflow",
    status: "pending",
    destination: `${def.to.kind}:${def.to.id}`,
    attempt: 0,
    depth: 0,
    clearance: def.clearance,
    dueAtMs: null,
    cost: 0,
    output: null,
    error: null,
    approvalId: null,
    delegation: null,
    checkpoint: null,
    delegations: 0,
    turns: 0,
  };
}

export interface TaskState {
  task: TaskRecord;
  /** Keyed by step id; workflow steps first in definition order, then delegation steps. */
  steps: ReadonlyMap<string, StepRecord>;
  workflow: WorkflowDefinition;
}

/**
 * Who sent an inbound event, as authenticated (src/bus/auth/): a worker of a queue, the gateway (FOREIGN results,
 * naming the agent), or the coordinator itself (events it makes up, e.g. a refused foreign dispatch). Only this,
 * never a name from the envelope, decides whether the event may touch a step and what the audit row's actor is.
 */
export type EventSender =
  | { kind: "queue"; endpoint: string }
  | { kind: "gateway"; agent: string }
  | { kind: "coordinator" }
  /** A tenant through the API or CLI (`TaskService.Reply`); `actor` as recorded (API key name, `cli`). */
  | { kind: "api"; actor: string };

interface EventBase {
  /** Unique per event; seeds the ids of everything the event produces (so a redelivery reproduces them). */
  eventId: string;
}

/**
 * The event id of a task's start, on either path (inline in the starting transaction, or an inbox envelope applied
 * by the shard owner): the same id, so the two dedupe each other.
 */
export function startEventId(taskId: string): string {
  return `start:${taskId}`;
}

export type CoordinatorEvent =
  | (EventBase & { type: "task_started" })
  | (EventBase & {
      type: "result";
      stepId: string;
      attempt: number;
      sender: EventSender;
      /** The turn the RESULT answers (envelope field `turn`); undefined from a sender that does not say (older harness, gateway). */
      turn?: number;
      ok: boolean;
      output: unknown;
      error: StepError | null;
      cost: number;
      payloadHash: string;
      /**
       * The hop never reached its destination: a FOREIGN send that failed before any request left (card
       * unreachable, DNS, egress refused, breaker open). Re-sending it repeats nothing, so the step's retries apply
       * even to an agent not registered idempotent. Set only for a result the gateway's foreign path authenticated.
       */
      undelivered?: boolean;
      /** How a FOREIGN result's cost was reached (`reported_usage` | `estimate_plus_elapsed`); the audit reason says it. */
      pricedBy?: string;
    })
  | (EventBase & {
      type: "query";
      originStepId: string;
      originAttempt: number;
      sender: EventSender;
      /** The sub-queries, in the order the handler listed them; none for `awaitMore` (keep waiting). */
      queries: ReadonlyArray<{ destination: string; correlationId: string; query: unknown }>;
      /** What the worker wrote; informational only: the delegation's depth comes from the origin step's record. */
      depth: number;
      /** The origin turn that stood down: its step's `turns` when the turn began (echoed from WORK/REPLY). */
      turn: number;
      /** Cost the origin's turn spent before it stood down. */
      cost: number;
      state: unknown;
    })
  | (EventBase & { type: "approval_decided"; approvalId: string; approve: boolean; actor: string; reason: string })
  | (EventBase & { type: "step_due"; stepId: string; attempt: number })
  | (EventBase & { type: "heartbeat"; stepId: string; attempt: number; sender: EventSender })
  | (EventBase & { type: "cancel"; actor: string; reason: string })
  /** The sweep found a pending step whose needs are all complete: a transition was lost; dispatch what is ready. */
  | (EventBase & { type: "repair" })
  /** The releaser (src/fairness/releaser.ts) chose this held step to go next. */
  | (EventBase & { type: "release"; stepId: string })
  /**
   * Post `text` to the task's reply address (issue 9): from a worker (a CONTROL envelope; `stepId`/`attempt` name
   * the step it works on) or from the tenant through the API (`stepId` null). `requestId` is how the caller finds
   * the outcome row (the envelope id, or the API call's id).
   */
  | (EventBase & {
      type: "reply_request";
      stepId: string | null;
      attempt: number;
      sender: EventSender;
      text: string;
      idempotencyKey: string;
      requestId: string;
    });

/** An envelope the shell should encode and send; plain data so decision code needs no generated classes. */
export interface EnvelopeSpec {
  id: string;
  kind: "WORK" | "REPLY";
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  /** Where it goes (`role:NAME` …); also the logical stream name. */
  destination: string;
  clearanceFloor: number;
  delegationDepth: number;
  correlationId: string;
  /** JSON text of the payload. */
  payloadJson: string;
  /**
   * The step's turn, as the payload also says: on the envelope so a harness can mark it without parsing the payload
   * (bus/turn-marks.ts). Absent on envelopes an older coordinator wrote to the outbox.
   */
  turn?: number;
  status?: "ok" | "error";
  error?: StepError | null;
  sourceStepId?: string;
  resultRef?: string;
  createdAtMs: number;
  /** W3C traceparent of the hop that emitted it (src/telemetry/hop-spans.ts); set only when tracing is on. */
  traceparent?: string;
}

export interface ApprovalSpec {
  id: string;
  orgId: string;
  taskId: string;
  stepId: string;
  action: ActionType;
  destination: string;
  rule: string;
  reason: string;
  cost: number;
  expiresAtMs: number;
  /** Set when the approval holds an origin reply (action `origin_reply`) rather than a step's hop. */
  replyId?: string;
}

/** One governed hop as decided, for metrics and the demo's hop table. */
export interface HopRecord {
  facts: HopFacts;
  verdict: Verdict;
  envelopeId: string;
}

export type Effect =
  | { type: "audit"; entry: AuditEntry }
  | { type: "send"; envelope: EnvelopeSpec }
  | { type: "foreign_dispatch"; envelope: EnvelopeSpec }
  | { type: "open_approval"; approval: ApprovalSpec }
  | { type: "close_approval"; approvalId: string; approved: boolean; actor: string; reason: string }
  | { type: "hop"; hop: HopRecord }
  | { type: "log"; level: "info" | "warn" | "error"; message: string; fields: Record<string, unknown> }
  | { type: "count"; metric: "delegation_depth_exceeded" | "orphan_reply" | "stale_event" | "stranded_step_repaired" | "origin_reply"; labels?: Record<string, string> }
  /** A new origin_replies row (refused, parked or pending), written before any dial. */
  | { type: "record_reply"; reply: ReplyRecord }
  /** A parked reply decided: pending (approved) or refused. */
  | { type: "update_reply"; update: ReplyUpdate }
  /** The reply token bucket of (tenant, actor) after a reply took a token. */
  | { type: "reply_bucket"; orgId: string; actor: string; tokens: number; atMs: number }
  /** A ready step held back by a dispatch limit: its `held_steps` row (written, or its reason updated). */
  | { type: "hold"; held: HeldStep };

export interface DecideContext {
  now: number;
  /** The governor, bound to the tenant's policy. Pure. */
  govern: (hop: HopFacts) => Verdict;
  /** sha256 hex of a payload's JSON text. Pure. */
  hashPayload: (json: string) => string;
  /** Deterministic id source, seeded by the event. */
  newId: () => string;
  maxPayloadBytes: number;
  defaultStepTimeoutMs: number;
  /** How long an approval stays open before it expires (denied, step failed closed). */
  approvalTtlMs: number;
  /** The tenant's daily cost (before this event), daily budget and egress switch. */
  tenant: TenantFacts;
  /** Bounds of origin replies (config.origin). @defaultValue DEFAULT_REPLY_LIMITS */
  replyLimits?: ReplyLimits;
  /** Fan-out bounds. @defaultValue DEFAULT_DELEGATION_LIMITS */
  delegationLimits?: DelegationLimits;
  /** I/O facts the shell gathered for a `reply_request` or a reply's `approval_decided` before deciding. */
  reply?: ReplyEventFacts;
  /** Dispatch limits (issue 15); absent when none applies to the batch: every dispatch is admitted. */
  admission?: AdmissionCheck;
}

export interface Decision {
  state: TaskState;
  effects: Effect[];
  /** Why the event changed nothing, when it did not. */
  ignored?: string;
  /**
   * Why the event was refused: its authenticated sender may not touch that step (not the step's destination). It
   * changes nothing, like an ignored event, but the shell dead-letters it and counts it rather than acknowledging it.
   */
  refused?: string;
}

/** Delegation depth at/after which no REPLY is delivered (seed 000's MAX_DELEGATION_DEPTH). */
export const MAX_DELEGATION_DEPTH = 8;
