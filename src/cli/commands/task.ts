/**
 * `switchyard task start|get|cancel` — run a workflow and watch or stop the run.
 *
 * TaskView (the JSON of `task get --json` and the last line of `task start --json`):
 * ```json
 * {"id":"<uuid>","orgId":"T","workflow":"name@1","status":"running|parked|completed|failed|cancelled",
 *  "input":{…},"cost":6.4,"budget":100|null,"error":null|{"code":"…","message":"…","stepId":"…"?},
 *  "createdAt":"<ISO 8601>","finishedAt":"<ISO 8601>"|null,
 *  "steps":[{"id":"research","kind":"workflow|delegation","status":"pending|dispatched|retrying|parked|waiting|completed|failed|cancelled",
 *            "destination":"role:researcher","attempts":1,"cost":2,"output":…|null,"error":null|{"code":"…","message":"…"},
 *            "approvalId":"<uuid>"|null}]}
 * ```
 * Workflow steps come in definition order, then delegation steps (`<origin step>.d<n>`).
 */
import type { Command } from "commander";
import { getTaskView, type TaskView } from "../../coordinator/tasks.js";
import { parseJsonOption, requireTenant, secondsOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import { CommandExit, type CliContext } from "../context.js";
import { ExitCode, formatNumber, formatTable, formatTime } from "../output.js";
import { formatStepLine, watchTask } from "../task-watch.js";

interface StartOptions {
  tenant: string;
  input?: string;
  idempotencyKey?: string;
  wait?: boolean;
  timeout?: number;
  json?: boolean;
}

export function registerTaskCommands(program: Command, run: ActionRunner): void {
  const task = program.command("task").description("start, inspect and cancel tasks");

  /**
   * `task start NAME[@V] --tenant T [--input JSON] [--idempotency-key K] [--wait] [--timeout SECONDS] [--json]`
   *
   * Starts a task; a repeated idempotency key returns the task it started first. Human output ends with the task
   * id alone on the last line. With `--wait` it prints a line per step change (polling every 200 ms) and exits 0
   * when the task completes, 1 when it fails or is cancelled, 1 (TIMEOUT) when `--timeout` passes first; a parked
   * approval is waited for (decide it with `switchyard approval approve`). With `--json` the last stdout line is
   * the TaskView (after the wait, if any) and progress goes to stderr. Bad `--input` JSON exits 2.
   */
  task
    .command("start")
    .description("start a task of a workflow")
    .argument("<workflow>", "NAME (latest version) or NAME@VERSION")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--input <json>", "task input as JSON", undefined)
    .option("--idempotency-key <key>", "start at most one task per key")
    .option("--wait", "wait for the task to finish, printing step progress")
    .option("--timeout <seconds>", "with --wait: give up after this long", secondsOption)
    .option("--json", "print the task as JSON (TaskView) on the last line")
    .action(
      run(async (ctx, workflow: string, options: StartOptions) => {
        const tenant = requireTenant(options.tenant);
        const input = parseJsonOption("--input", options.input);
        await ctx.withRuntime(async (runtime) => {
          const started = await runtime.tasks.start({
            orgId: tenant,
            workflow,
            input,
            ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
          });
          const say = (line: string) => (options.json ? ctx.note(line) : ctx.print(line));
          say(`${started.created ? "started" : "already started (same idempotency key)"}: task ${started.taskId} of ${started.workflow}`);
          if (!options.wait) {
            if (options.json) ctx.printJson(await runtime.tasks.get(tenant, started.taskId));
            else ctx.print(started.taskId);
            return;
          }
          const final = await waitWithProgress(ctx, say, { tasks: runtime.tasks, tenant, taskId: started.taskId, timeoutSeconds: options.timeout });
          if (options.json) ctx.printJson(final);
          else ctx.print(started.taskId);
          if (final.status !== "completed") throw new CommandExit(ExitCode.Failed);
        });
      }),
    );

  /**
   * `task get ID --tenant T [--json]` — the task with its steps. Human output: a status line and a step table.
   * JSON: the TaskView (see the top of this file).
   */
  task
    .command("get")
    .description("show a task and its steps")
    .argument("<id>", "task id")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--json", "print the task as JSON (TaskView)")
    .action(
      run(async (ctx, id: string, options: { tenant: string; json?: boolean }) => {
        const tenant = requireTenant(options.tenant);
        const view = await ctx.withPool((pool) => getTaskView(pool, tenant, id));
        if (options.json) return ctx.printJson(view);
        printTask(ctx, view);
      }),
    );

  /**
   * `task cancel ID --tenant T [--reason R] [--actor A] [--json]` — cancels a running or parked task (open
   * steps are cancelled; late results are ignored). Cancelling a finished task changes nothing and says so.
   * JSON: the TaskView after the cancel.
   */
  task
    .command("cancel")
    .description("cancel a task")
    .argument("<id>", "task id")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--reason <reason>", "why (recorded in the audit log)", "cancelled from the CLI")
    .option("--actor <actor>", "who cancels (recorded in the audit log)", "cli")
    .option("--json", "print the task as JSON (TaskView)")
    .action(
      run(async (ctx, id: string, options: { tenant: string; reason: string; actor: string; json?: boolean }) => {
        const tenant = requireTenant(options.tenant);
        await ctx.withRuntime(async (runtime) => {
          const before = await runtime.tasks.get(tenant, id);
          const after = ["completed", "failed", "cancelled"].includes(before.status)
            ? before
            : await runtime.tasks.cancel(tenant, id, options.actor, options.reason);
          if (options.json) return ctx.printJson(after);
          if (after === before) ctx.print(`task ${id} is already ${before.status}; nothing to cancel`);
          else ctx.print(`task ${id}: ${after.status}`);
        });
      }),
    );
}

async function waitWithProgress(
  ctx: CliContext,
  say: (line: string) => void,
  options: { tasks: Parameters<typeof watchTask>[0]["tasks"]; tenant: string; taskId: string; timeoutSeconds: number | undefined },
): Promise<TaskView> {
  const stop = ctx.shutdownSignal();
  try {
    const final = await watchTask({
      tasks: options.tasks,
      orgId: options.tenant,
      taskId: options.taskId,
      signal: stop.signal,
      ...(options.timeoutSeconds !== undefined ? { timeoutMs: options.timeoutSeconds * 1000 } : {}),
      onStep: (step) => {
        say(formatStepLine(step));
        if (step.status === "parked" && step.approvalId) {
          say(`  decide with: switchyard approval approve ${step.approvalId} --tenant ${options.tenant}   (or: approval deny …)`);
        }
      },
    });
    say(`task ${final.id} ${final.status}, cost ${formatNumber(final.cost)}${final.error ? ` — ${final.error.code}: ${final.error.message}` : ""}`);
    return final;
  } finally {
    stop.dispose();
  }
}


export function printTask(ctx: CliContext, view: TaskView): void {
  ctx.print(`task ${view.id} (${view.workflow}) for tenant ${view.orgId}`);
  ctx.print(`status ${view.status}, cost ${formatNumber(view.cost)}${view.budget !== null ? ` of ${formatNumber(view.budget)}` : ""}, created ${formatTime(view.createdAt)}${view.finishedAt ? `, finished ${formatTime(view.finishedAt)}` : ""}`);
  if (view.error) ctx.print(`error ${view.error.code}: ${view.error.message}`);
  ctx.print("");
  ctx.print(
    formatTable(
      ["step", "status", "attempts", "cost", "destination", "note"],
      view.steps.map((s) => [s.id, s.status, s.attempts, s.cost, s.destination, s.error ? `${s.error.code}: ${s.error.message}` : s.approvalId ? `approval ${s.approvalId}` : ""]),
    ),
  );
}
