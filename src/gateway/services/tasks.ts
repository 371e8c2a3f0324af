/**
 * TaskService: start (idempotent by key), get, list, cancel, watch and explain the calling tenant's tasks. Get and
 * Watch add each step's attempts, delegation links and bridges (step-history.ts) for the console's task page.
 */
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { TERMINAL_TASK_STATUSES } from "../../core/model.js";
import { getTaskView, type TaskView } from "../../tasks/tasks.js";
import { explainStall } from "../../diagnosis/explain-stall.js";
import { createLocalStallFacts } from "../../diagnosis/stall-facts-local.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { TaskService } from "../../gen/switchyard/api/v1/tasks_pb.js";
import { withTenantTransaction } from "../../store/tenant-scope.js";
import { callActor, tenantCall } from "../auth.js";
import { fromTimestamp, fromValue } from "../convert/values.js";
import { taskStatuses, taskSummaryToProto, taskToProto } from "../convert/tasks.js";
import { listTasks } from "../task-list.js";
import { readStepExtras, withStepExtras } from "../step-history.js";
import type { ServiceDeps } from "./deps.js";

const MAX_IDEMPOTENCY_KEY_CHARS = 256;

function requireField(value: string, path: string, what: string): string {
  if (value.trim() === "") throw new SwitchyardError(ErrorCode.InvalidArgument, `${path}: ${what} is required`, { details: { path } });
  return value;
}

function isTerminal(view: TaskView): boolean {
  return TERMINAL_TASK_STATUSES.includes(view.status);
}

/** What Watch reports a change of: the task's status and each step's status, attempt and approval. */
function fingerprint(view: TaskView): string {
  return JSON.stringify([view.status, view.steps.map((s) => [s.id, s.status, s.attempts, s.approvalId])]);
}

export function taskService(deps: ServiceDeps): ServiceImpl<typeof TaskService> {
  const readView = (orgId: string, id: string) =>
    withTenantTransaction(deps.pool, orgId, async (client) => {
      const view = await getTaskView(deps.stores, client, orgId, id);
      return { view, extras: await readStepExtras(deps.stores, client, orgId, id) };
    });

  return {
    async start(req, ctx) {
      const { orgId } = tenantCall(ctx);
      requireField(req.workflow, "workflow", "the workflow (NAME or NAME@VERSION)");
      if (req.idempotencyKey.length > MAX_IDEMPOTENCY_KEY_CHARS) {
        throw new SwitchyardError(ErrorCode.InvalidArgument, `idempotency_key: at most ${MAX_IDEMPOTENCY_KEY_CHARS} characters`, { details: { path: "idempotency_key" } });
      }
      const started = await deps.starts.start({
        orgId,
        workflow: req.workflow,
        input: req.input === undefined ? undefined : fromValue(req.input),
        ...(req.idempotencyKey !== "" ? { idempotencyKey: req.idempotencyKey } : {}),
      });
      // A task created by this call is answered as written; one an idempotency key named is read back.
      return { task: taskToProto(started.view ?? (await deps.tasks.get(orgId, started.taskId))), created: started.created };
    },

    async get(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const { view, extras } = await readView(orgId, req.id);
      return { task: withStepExtras(taskToProto(view), extras) };
    },

    async list(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const statuses = req.statuses.map((s, i) => {
        const status = taskStatuses.fromProtoOptional(s);
        if (!status) throw new SwitchyardError(ErrorCode.InvalidArgument, `statuses[${i}]: not a task status`, { details: { path: `statuses[${i}]` } });
        return status;
      });
      const page = await withTenantTransaction(deps.pool, orgId, (client) =>
        listTasks(deps.stores.taskReads, client, orgId, {
          statuses,
          workflow: req.workflow,
          pageSize: req.pageSize,
          pageToken: req.pageToken,
          ...(req.createdAfter ? { createdAfter: fromTimestamp(req.createdAfter)! } : {}),
          ...(req.createdBefore ? { createdBefore: fromTimestamp(req.createdBefore)! } : {}),
        }),
      );
      return { tasks: page.tasks.map(taskSummaryToProto), nextPageToken: page.nextPageToken ?? "" };
    },

    async cancel(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const before = await deps.tasks.get(orgId, req.id);
      if (isTerminal(before)) return { task: taskToProto(before), alreadyFinished: true };
      const after = await deps.tasks.cancel(orgId, req.id, callActor(ctx, req.actor), req.reason.trim() || "cancelled through the API");
      return { task: taskToProto(after), alreadyFinished: false };
    },

    async reply(req, ctx) {
      const { orgId } = tenantCall(ctx);
      requireField(req.taskId, "task_id", "the task id");
      const outcome = await deps.tasks.reply({
        orgId,
        taskId: req.taskId,
        text: req.text,
        ...(req.idempotencyKey !== "" ? { idempotencyKey: req.idempotencyKey } : {}),
        actor: callActor(ctx, ""),
        signal: AbortSignal.any([ctx.signal, deps.stopping]),
      });
      return {
        status: outcome.status,
        code: outcome.code ?? "",
        message: outcome.message ?? "",
        permalink: outcome.permalink ?? "",
        replyId: outcome.replyId,
        approvalId: outcome.approvalId ?? "",
      };
    },

    async explain(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const view = await deps.tasks.get(orgId, req.id);
      // The same reading as the CLI's without --url, under the tenant's row-level security: its approvals and bridges,
      // the flags that hold it or its steps' queues, and the harness groups of those queues.
      const lines = await withTenantTransaction(deps.pool, orgId, (client) =>
        explainStall(view, createLocalStallFacts({ db: client, redis: deps.redis, keyPrefix: deps.keyPrefix, flagDefaults: deps.flagDefaults, flags: deps.stores.flags, facts: deps.stores.stallFacts })),
      );
      return { lines };
    },

    async *watch(req, ctx: HandlerContext) {
      const { orgId } = tenantCall(ctx);
      // Refused here (RESOURCE_EXHAUSTED) before anything is read when the tenant or the process is at its limit.
      const slot = deps.watches.open(orgId, req.id);
      // The client went away, or the gateway is shutting down: either ends the stream quietly.
      const signal = AbortSignal.any([ctx.signal, deps.stopping]);
      try {
        let last: string | undefined;
        for (;;) {
          const { view, extras } = await readView(orgId, req.id);
          const now = fingerprint(view);
          if (now !== last) {
            last = now;
            yield { task: withStepExtras(taskToProto(view), extras) };
          }
          if (isTerminal(view)) return;
          // No query of its own while idle: the hub's shared poll wakes this stream when its task changes.
          await slot.changed(signal);
          if (signal.aborted) return;
        }
      } finally {
        slot.release();
      }
    },
  };
}
