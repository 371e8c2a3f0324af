/**
 * Writing task starts, for both paths of TaskService (the engine inline, or a start envelope for the shard owner):
 * each request is checked on its own, then the tasks of ONE tenant (idempotency keys respected) and their pending
 * steps are written with one statement per table. A request that is bad (input too large or too deep, reply address invalid,
 * workflow unknown) fails alone: the others of its batch still start. The rows are written through the task
 * service's port (store/tasks/task-store.ts).
 */
import { randomUUID } from "node:crypto";
import { ErrorCode, SwitchyardError, isSwitchyardError } from "../errors.js";
import { depthBeyond, MAX_JSON_DEPTH } from "../json-depth.js";
import { validateAddress, viewAddress, type ReplyAddress } from "../core/reply-address.js";
import type { PoolClient } from "../store/db.js";
import { getWorkflow, type StoredWorkflow } from "../store/workflow-store.js";
import { recordTaskStart } from "../telemetry/task-spans.js";
import { activeTraceparent } from "../telemetry/traceparent.js";
import { tracingOn } from "../telemetry/tracing.js";
import { pendingWorkflowStep, type StepRecord, type TaskRecord } from "../core/model.js";
import type { TaskStore } from "../store/tasks/task-store.js";
import type { StartTaskRequest, TaskView } from "./tasks.js";

export interface StartedTask {
  taskId: string;
  /** False when the idempotency key named a task started before: `taskId` is that task. */
  created: boolean;
  /** `name@version` */
  workflow: string;
  /** The task as this call created it (running, every step pending); absent when it was not created here. */
  view?: TaskView;
}

/** One request's outcome: its task, or its own error. */
export type StartSettled = { ok: true; started: StartedTask } | { ok: false; error: SwitchyardError };

/** Hook run in the starting transaction with the requests that created their task (index into the requests). */
export type OnStartsCreated = (client: PoolClient, created: ReadonlyArray<{ index: number; taskId: string }>) => Promise<void>;

export interface WrittenStarts {
  settled: StartSettled[];
  /** The tasks created by this batch, in request order; `traceparent`: the task's root trace context (tracing on). */
  created: Array<{ index: number; taskId: string; steps: StepRecord[]; traceparent?: string }>;
}

/** What can be checked without the database, per request: the reply address it carries, or its error. */
export function checkStarts(orgId: string, requests: readonly StartTaskRequest[], maxPayloadBytes: number): Array<{ replyTo: ReplyAddress | null } | SwitchyardError> {
  return requests.map((request) => {
    if (request.orgId !== orgId) throw new SwitchyardError(ErrorCode.Internal, `a start batch of tenant ${orgId} got a request of tenant ${request.orgId}`);
    try {
      // Before stringify, which recurses: a deep enough input would throw RangeError and fail the whole batch.
      if (depthBeyond(request.input) !== 0) throw new SwitchyardError(ErrorCode.InvalidArgument, `task input nests deeper than ${MAX_JSON_DEPTH} levels`);
      if (Buffer.byteLength(JSON.stringify(request.input ?? {})) > maxPayloadBytes) {
        throw new SwitchyardError(ErrorCode.PayloadTooLarge, `task input is over the ${maxPayloadBytes}-byte limit`);
      }
      return { replyTo: request.replyTo ? validateAddress(request.replyTo) : null };
    } catch (error) {
      if (isSwitchyardError(error)) return error;
      throw error;
    }
  });
}

/**
 * Inserts the tasks and pending steps of the requests that passed `checkStarts`, in the caller's transaction; runs
 * each created request's `onCreated` and then the batch's. Errors other than a request's own fail the batch.
 */
export async function writeStarts(
  store: Pick<TaskStore, "insertTasks" | "saveSteps" | "idsByIdempotencyKey">,
  client: PoolClient,
  orgId: string,
  requests: readonly StartTaskRequest[],
  checked: ReadonlyArray<{ replyTo: ReplyAddress | null } | SwitchyardError>,
  onCreated?: OnStartsCreated,
): Promise<WrittenStarts> {
  const workflows = new Map<string, StoredWorkflow | SwitchyardError>();
  for (const [i, request] of requests.entries()) {
    if (checked[i] instanceof SwitchyardError || workflows.has(request.workflow)) continue;
    workflows.set(request.workflow, await getWorkflow(client, orgId, request.workflow).catch((error: unknown) => (isSwitchyardError(error) ? error : Promise.reject(error))));
  }
  const settled: Array<StartSettled | undefined> = [];
  const rows: Array<{ index: number; task: TaskRecord; idempotencyKey: string | null; stored: StoredWorkflow; traceparent?: string }> = [];
  const traced = tracingOn();
  for (const [index, request] of requests.entries()) {
    const check = checked[index]!;
    const stored = check instanceof SwitchyardError ? check : workflows.get(request.workflow)!;
    if (stored instanceof SwitchyardError) {
      settled[index] = { ok: false, error: stored };
      continue;
    }
    const task: TaskRecord = {
      id: randomUUID(),
      orgId,
      workflowName: stored.name,
      workflowVersion: stored.version,
      input: request.input ?? {},
      status: "running",
      budget: stored.definition.budget,
      cost: 0,
      error: null,
      finishedAtMs: null,
      replyTo: (check as { replyTo: ReplyAddress | null }).replyTo,
    };
    const row = { index, task, idempotencyKey: request.idempotencyKey ?? null, stored };
    // The task's trace starts here, as a child of the request that asked for it (captured where it was asked).
    rows.push(traced ? { ...row, traceparent: recordTaskStart(orgId, task.id, `${stored.name}@${stored.version}`, request.traceparent ?? activeTraceparent()) } : row);
  }
  const inserted = await store.insertTasks(client, rows);
  // A key used before (or twice in this batch) names the task that has it.
  const reused = rows.filter((r) => !inserted.has(r.task.id)).map((r) => r.idempotencyKey!);
  const existing = reused.length > 0 ? await store.idsByIdempotencyKey(client, orgId, reused) : new Map<string, string>();
  const created: WrittenStarts["created"] = [];
  for (const r of rows) {
    const workflow = `${r.stored.name}@${r.stored.version}`;
    const createdAt = inserted.get(r.task.id);
    if (!createdAt) {
      settled[r.index] = { ok: true, started: { taskId: existing.get(r.idempotencyKey!)!, created: false, workflow } };
      continue;
    }
    const steps = r.stored.definition.steps.map((s) => pendingWorkflowStep(r.task.id, orgId, s));
    created.push({ index: r.index, taskId: r.task.id, steps, ...(r.traceparent ? { traceparent: r.traceparent } : {}) });
    settled[r.index] = { ok: true, started: { taskId: r.task.id, created: true, workflow, view: createdView(r.task, workflow, createdAt, steps) } };
  }
  for (const c of created) await requests[c.index]!.onCreated?.(client, c.taskId);
  if (created.length > 0) await onCreated?.(client, created);
  await store.saveSteps(client, created.flatMap((c) => c.steps));
  return { settled: settled as StartSettled[], created };
}

/** A task just created, as `getTaskView` would read it back (steps in definition order). */
function createdView(task: TaskRecord, workflow: string, createdAt: Date, steps: readonly StepRecord[]): TaskView {
  return {
    id: task.id,
    orgId: task.orgId,
    workflow,
    status: task.status,
    input: task.input,
    cost: 0,
    budget: task.budget,
    error: null,
    createdAt: createdAt.toISOString(),
    finishedAt: null,
    steps: steps.map((s) => ({
      id: s.stepId,
      kind: s.kind,
      status: s.status,
      destination: s.destination,
      attempts: 0,
      cost: 0,
      output: null,
      error: null,
      approvalId: null,
      awaiting: [],
    })),
    replyTo: viewAddress(task.replyTo),
    replies: [],
  };
}
