/**
 * Task-level operations for the CLI and API: start (idempotent by key), get, cancel, and decide an approval.
 * Each runs the coordinator engine inside its own transaction, then publishes what it committed. The task, step
 * and reply rows it writes and reads go through the ports in its options (store/tasks/task-store.ts).
 */
import { randomUUID } from "node:crypto";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { retryOnConflict, type Pool, type PoolClient, type Queryable } from "../store/db.js";
import { unscoped, type TransactionRunner } from "../store/tenant-scope.js";
import { getWorkflow } from "../store/workflow-store.js";
import { tryAddress, viewAddress, type ReplyAddress, type ReplyAddressView } from "../core/reply-address.js";
import { defaultReplyKey, MAX_REPLY_KEY_CHARS } from "../replies/reply-key.js";
import { waitForReplyOutcome } from "../replies/reply-outcome.js";
import type { ReplyRowStore, ReplyView } from "../store/replies/reply-store.js";
import type { TaskStore } from "../store/tasks/task-store.js";
import type { ReplyOutcome } from "../core/reply-types.js";
import type { ApprovalDecisionVia, ApprovalStore } from "../store/approvals/approval-store.js";
import type { ApplyResult, Engine } from "../coordinator/engine.js";
import { EXPIRY_ACTOR, startEventId, type StepRecord, type TaskRecord, type TaskStatus } from "../core/model.js";
import type { OutboxPublisher } from "../coordinator/outbox-publisher.js";
import { insertStartEnvelopes, type StartOwner } from "./start-envelope.js";
import { checkStarts, writeStarts, type OnStartsCreated, type StartedTask, type StartSettled } from "./task-starts.js";
import { isUuid } from "../domain.js";

export type { StartedTask, StartSettled } from "./task-starts.js";

/** What a task's view reads through (`runtime.stores`): the task and its steps, and its replies. */
export interface TaskViewStores {
  tasks: Pick<TaskStore, "task" | "steps" | "heldReasons">;
  replies: Pick<ReplyRowStore, "list">;
}

export interface TaskServiceOptions {
  pool: Pool;
  engine: Engine;
  /** The approval rows a decision locks, reads and closes (`runtime.stores.approvals`). */
  approvals: ApprovalStore;
  /** The task and step rows (and start envelopes) starts write and views read (`runtime.stores.tasks`). */
  tasks: TaskStore;
  /** The reply rows a view lists and `reply` waits on (`runtime.stores.replies`). */
  replies: Pick<ReplyRowStore, "list" | "outcomeRow">;
  /** Publishes committed outbox rows at once; without it the relay sweep picks them up. */
  publisher?: OutboxPublisher;
  maxPayloadBytes: number;
  /**
   * How transactions are opened. The API passes `tenantScoped(pool)` so every tenant request runs under
   * row-level security; operator paths (CLI, demo) use the default, an ordinary transaction.
   */
  transact?: TransactionRunner;
  /** Tells a late approval decision from a timely one. @defaultValue Date.now */
  clock?: () => number;
  /** How long `reply` waits for the outcome (replyDeadlineMs(config)). @defaultValue 60 s */
  replyDeadlineMs?: number;
  /**
   * Starts through the tenant's shard owner (the gateway): a start writes the task and a signed `task_started`
   * envelope for the owner's inbox, and runs no engine. Without it, starts run the engine inline (operator CLI,
   * demo, tests without a coordinator). README, "Task starts".
   */
  owner?: StartOwner;
}

export interface TaskReplyRequest {
  orgId: string;
  taskId: string;
  text: string;
  /** @defaultValue sha256(taskId, text): the same words are posted once */
  idempotencyKey?: string;
  /** Who posts, as recorded (`user:ann`, `cli`, an API key's name). */
  actor: string;
  signal?: AbortSignal;
}

export { EXPIRY_ACTOR } from "../core/model.js";

export interface DecideApprovalRequest {
  orgId: string;
  approvalId: string;
  approve: boolean;
  /** Who decides, recorded in the audit row and on the approval (`user:ann`, `cli`, `link:<kid>`, `system:expiry`). */
  actor: string;
  reason?: string;
  /** How the decision arrived, recorded as `approvals.decided_via`. */
  via?: ApprovalDecisionVia;
  /**
   * Runs inside the deciding transaction, only when this call closes the approval (not when it was decided
   * already), so whatever it writes commits or rolls back with the decision — e.g. a link token marked used.
   */
  onDecided?: (client: PoolClient) => Promise<void>;
}

export interface DecideApprovalOutcome {
  status: "approved" | "denied";
  decidedBy: string;
  /** True when this call's decision was not applied: decided before, expired, or the step no longer parked. */
  alreadyDecided: boolean;
}

export interface StartTaskRequest {
  orgId: string;
  /** `name` (latest version) or `name@version`. */
  workflow: string;
  input?: unknown;
  idempotencyKey?: string;
  /**
   * Where an answer may be posted (verified ingest only, src/ingest/). Written to `tasks.reply_to` when the row is
   * inserted and never afterwards: the column is immutable (a trigger refuses any change).
   */
  replyTo?: ReplyAddress | null;
  /**
   * Runs inside the starting transaction, only when this call created the task, so whatever it writes (the ingest
   * delivery row) commits or rolls back with the task.
   */
  onCreated?: (client: PoolClient, taskId: string) => Promise<void>;
  /** The W3C traceparent of the caller's span (an API request's), when tracing is on: the task's trace continues it. */
  traceparent?: string | undefined;
}

export interface StepView {
  id: string;
  kind: "workflow" | "delegation";
  status: StepRecord["status"];
  destination: string;
  attempts: number;
  cost: number;
  output: unknown;
  error: StepRecord["error"];
  approvalId: string | null;
  /**
   * The sub-queries the step's handler has not yet been handed a reply for, in the order asked (from the step's
   * checkpoint; empty when it has none). `arrived`: the reply was received and is queued behind the running turn.
   */
  awaiting: AwaitedReplyView[];
  /** Why a `held` step waits, e.g. `queued behind tenant limit (3/3 in flight on role:writer)` (src/fairness/). */
  queuedReason?: string;
}

export interface AwaitedReplyView {
  correlationId: string;
  delegateStepId: string;
  arrived: boolean;
}

export interface TaskView {
  id: string;
  orgId: string;
  workflow: string;
  status: TaskStatus;
  input: unknown;
  cost: number;
  budget: number | null;
  error: TaskRecord["error"];
  createdAt: string;
  finishedAt: string | null;
  steps: StepView[];
  /** Where replies go (kind and display only); null when the task has no reply address. */
  replyTo: ReplyAddressView | null;
  /** Every reply attempt, oldest first; never its text or any credential. */
  replies: ReplyView[];
}

export class TaskService {
  private readonly transact: TransactionRunner;
  private readonly clock: () => number;
  private readonly views: TaskViewStores;

  constructor(private readonly options: TaskServiceOptions) {
    this.transact = options.transact ?? unscoped(options.pool);
    this.clock = options.clock ?? Date.now;
    this.views = { tasks: options.tasks, replies: options.replies };
  }

  async start(request: StartTaskRequest): Promise<StartedTask> {
    const [settled] = await this.startEach(request.orgId, [request]);
    return unwrapStart(settled!);
  }

  /**
   * Starts several tasks of ONE tenant in one transaction, each idempotent by its own key exactly as `start`;
   * answers one outcome per request, in order: its task, or its own error (one bad request does not fail the
   * others). Callers that receive independent requests in bursts group them (StartBatcher) so N starts cost one
   * commit. Inline: one engine batch, one audit append under the tenant's chain head. Through the owner: one insert
   * of tasks, of steps and of start envelopes (outbox), published after commit; no engine run here.
   */
  async startEach(orgId: string, requests: readonly StartTaskRequest[], options: { onCreated?: OnStartsCreated } = {}): Promise<StartSettled[]> {
    const checked = checkStarts(orgId, requests, this.options.maxPayloadBytes);
    if (checked.every((c) => c instanceof SwitchyardError)) return checked.map((error) => ({ ok: false, error: error as SwitchyardError }));
    const outcome = await this.transact(orgId, async (client) => {
      const written = await writeStarts(this.options.tasks, client, orgId, requests, checked, options.onCreated);
      if (written.created.length === 0) return { settled: written.settled, outbox: [], applied: undefined };
      const owner = this.options.owner;
      if (owner) return { settled: written.settled, outbox: await insertStartEnvelopes(this.options.tasks, client, orgId, written.created, owner), applied: undefined };
      const applied = await this.options.engine.applyInTransaction(
        client,
        written.created.map((c) => ({ orgId, taskId: c.taskId, event: { type: "task_started" as const, eventId: startEventId(c.taskId) }, traceparent: c.traceparent })),
      );
      // The engine moved the tasks on from what was written: their views would be stale.
      const settled = written.settled.map((r) => (r.ok ? { ok: true as const, started: { ...r.started, view: undefined } } : r));
      return { settled, outbox: [], applied };
    });
    await this.publish(outcome.applied);
    if (outcome.outbox.length > 0) await this.options.publisher?.publish(outcome.outbox);
    return outcome.settled;
  }

  /** `startEach` for callers that fail as a whole: the first request's error fails the call. */
  async startMany(orgId: string, requests: readonly StartTaskRequest[], options: { onCreated?: OnStartsCreated } = {}): Promise<StartedTask[]> {
    return (await this.startEach(orgId, requests, options)).map(unwrapStart);
  }

  /** Whether starts go through the shard owner (several start batches of one tenant may then commit at once). */
  get startsThroughOwner(): boolean {
    return this.options.owner !== undefined;
  }

  async get(orgId: string, taskId: string): Promise<TaskView> {
    return this.transact(orgId, (client) => getTaskView(this.views, client, orgId, taskId));
  }

  async cancel(orgId: string, taskId: string, actor: string, reason: string): Promise<TaskView> {
    await this.get(orgId, taskId);
    const applied = await this.transact(orgId, (client) =>
      this.options.engine.applyInTransaction(client, [{ orgId, taskId, event: { type: "cancel", eventId: `cancel:${taskId}`, actor, reason } }]),
    );
    await this.publish(applied);
    return this.get(orgId, taskId);
  }

  /**
   * Decides a pending approval. Idempotent: a second decision (either way, by any route) changes nothing and
   * returns the first outcome. A decision that arrives after the approval's deadline is not applied: the approval
   * expires instead (denied by `system:expiry`, the step fails closed), as the expiry sweep would have done.
   */
  async decideApproval(request: DecideApprovalRequest): Promise<DecideApprovalOutcome> {
    if (!isUuid(request.approvalId)) throw new SwitchyardError(ErrorCode.NotFound, `no approval ${request.approvalId} for tenant ${request.orgId}`);
    // Decisions lock the approval, then its task; a batch that locked the task first may deadlock with one: retry.
    const outcome = await retryOnConflict(() => this.transact(request.orgId, (client) => this.decideInTransaction(client, request)));
    await this.publish(outcome.applied);
    return { status: outcome.status, decidedBy: outcome.decidedBy, alreadyDecided: outcome.alreadyDecided };
  }

  private async decideInTransaction(client: PoolClient, request: DecideApprovalRequest): Promise<DecideApprovalOutcome & { applied: ApplyResult | undefined }> {
    // The row lock serialises every route a decision can take (API, CLI, link, expiry sweep).
    const approval = await this.options.approvals.get(client, request.orgId, request.approvalId, true);
    if (!approval) throw new SwitchyardError(ErrorCode.NotFound, `no approval ${request.approvalId} for tenant ${request.orgId}`);
    if (approval.status !== "pending") {
      return { status: approval.status, decidedBy: approval.decidedBy ?? "unknown", alreadyDecided: true, applied: undefined };
    }
    const late = approval.expiresAt !== null && Date.parse(approval.expiresAt) <= this.clock() && request.via !== "expiry";
    const decision = late
      ? { approve: false, actor: EXPIRY_ACTOR, reason: `approval expired at ${approval.expiresAt}`, via: "expiry" as const }
      : { approve: request.approve, actor: request.actor, reason: request.reason ?? "", via: request.via };
    const applied = await this.options.engine.applyInTransaction(client, [
      {
        orgId: request.orgId,
        taskId: approval.taskId,
        event: {
          type: "approval_decided",
          eventId: `approval:${approval.id}`,
          approvalId: approval.id,
          approve: decision.approve,
          actor: decision.actor,
          reason: decision.reason,
        },
      },
    ]);
    const after = await this.options.approvals.get(client, request.orgId, request.approvalId);
    let result: DecideApprovalOutcome;
    if (after?.status === "pending") {
      // The step moved on (task cancelled or failed): close the approval so it is not decided later.
      await this.options.approvals.closeUnparked(client, request.approvalId, "coordinator");
      result = { status: "denied", decidedBy: "coordinator", alreadyDecided: true };
    } else if (late) {
      result = { status: "denied", decidedBy: decision.actor, alreadyDecided: true };
    } else {
      result = { status: decision.approve ? "approved" : "denied", decidedBy: decision.actor, alreadyDecided: false };
    }
    if (decision.via) await this.options.approvals.recordDecisionVia(client, request.orgId, request.approvalId, decision.via);
    await request.onDecided?.(client);
    return { ...result, applied };
  }

  /**
   * Posts `text` to the task's reply address as the tenant (issue 9), for a running task or one that ended within
   * the grace window: governed, audited and bounded like a worker's reply. Waits for the outcome (or answers
   * `unknown` / `outcome_pending` at the deadline). NOT_FOUND for another tenant's task; FAILED_PRECONDITION when
   * the task ended too long ago.
   */
  async reply(request: TaskReplyRequest): Promise<ReplyOutcome> {
    const { orgId, taskId, text } = request;
    if (!isUuid(taskId)) throw notFound(orgId, taskId);
    if (typeof text !== "string") throw new SwitchyardError(ErrorCode.InvalidArgument, "text: the reply's words are required", { details: { path: "text" } });
    const idempotencyKey = request.idempotencyKey || defaultReplyKey(taskId, text);
    if (idempotencyKey.length > MAX_REPLY_KEY_CHARS) {
      throw new SwitchyardError(ErrorCode.InvalidArgument, `idempotency_key: at most ${MAX_REPLY_KEY_CHARS} characters`, { details: { path: "idempotency_key" } });
    }
    const requestId = randomUUID();
    const applied = await this.transact(orgId, (client) =>
      this.options.engine.applyInTransaction(client, [
        {
          orgId,
          taskId,
          event: { type: "reply_request", eventId: `reply:${requestId}`, stepId: null, attempt: 0, sender: { kind: "api", actor: request.actor }, text, idempotencyKey, requestId },
        },
      ]),
    );
    const refused = applied.refused[0];
    if (refused) {
      if (refused.label !== "wrong_sender") throw notFound(orgId, taskId);
      throw new SwitchyardError(ErrorCode.FailedPrecondition, refused.reason, { details: { reason: "REPLY_WINDOW_CLOSED" } });
    }
    await this.publish(applied);
    return waitForReplyOutcome(this.options.replies, (read) => this.transact(orgId, read), { orgId, taskId, requestId, idempotencyKey }, {
      deadlineMs: this.options.replyDeadlineMs ?? 60_000,
      ...(request.signal ? { signal: request.signal } : {}),
    });
  }

  private async publish(applied: ApplyResult | undefined): Promise<void> {
    // After COMMIT: rows made pending (a reply, an approved reply) are the sender's to dial now.
    this.options.engine.kickReplies(applied);
    if (applied && applied.outbox.length > 0 && this.options.publisher) await this.options.publisher.publish(applied.outbox);
  }
}


/** A task and its steps as tenants see them; NOT_FOUND for another tenant's task. Needs only the database. */
export async function getTaskView(stores: TaskViewStores, db: Queryable, orgId: string, taskId: string): Promise<TaskView> {
  if (!isUuid(taskId)) throw notFound(orgId, taskId);
  const row = await stores.tasks.task(db, orgId, taskId);
  if (!row) throw notFound(orgId, taskId);
  const stepRecords = await stores.tasks.steps(db, taskId);
  const stored = await getWorkflow(db, orgId, `${row.workflowName}@${row.workflowVersion}`);
  const order = new Map(stored.definition.steps.map((s, i) => [s.id, i]));
  const queued = await stores.tasks.heldReasons(db, taskId);
  const steps = stepRecords.sort((a, b) => (order.get(a.stepId) ?? 1e9) - (order.get(b.stepId) ?? 1e9));
  return {
    id: row.id,
    orgId: row.orgId,
    workflow: `${row.workflowName}@${row.workflowVersion}`,
    status: row.status,
    input: row.input,
    cost: row.cost,
    budget: row.budget,
    error: row.error,
    createdAt: row.createdAt.toISOString(),
    finishedAt: row.finishedAt ? row.finishedAt.toISOString() : null,
    steps: steps.map((s) => ({
      id: s.stepId,
      kind: s.kind,
      status: s.status,
      destination: s.destination,
      attempts: s.attempt,
      cost: s.cost,
      output: s.output,
      error: s.error,
      approvalId: s.approvalId,
      awaiting: awaitingOf(s),
      ...(s.status === "held" && queued.has(s.stepId) ? { queuedReason: queued.get(s.stepId)! } : {}),
    })),
    replyTo: viewAddress(row.replyTo == null ? null : (tryAddress(row.replyTo) ?? null)),
    replies: await stores.replies.list(db, orgId, taskId),
  };
}

/** What a step's handler still awaits, from its checkpoint. */
function awaitingOf(step: StepRecord): AwaitedReplyView[] {
  const checkpoint = step.checkpoint;
  if (!checkpoint) return [];
  const arrived = new Set(checkpoint.arrived);
  return checkpoint.awaiting.map((a) => ({ correlationId: a.correlationId, delegateStepId: a.delegateStepId, arrived: arrived.has(a.delegateStepId) }));
}

function unwrapStart(settled: StartSettled): StartedTask {
  if (!settled.ok) throw settled.error;
  return settled.started;
}

function notFound(orgId: string, taskId: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.NotFound, `no task ${taskId} for tenant ${orgId}`);
}
