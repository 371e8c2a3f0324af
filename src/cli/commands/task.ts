/**
 * `switchyard task start|watch|get|cancel|reply|list` — run a workflow and watch or stop the run; list the tenant's runs.
 *
 * TaskView (the JSON of `task get --json` and the last line of `task start --json`):
 * ```json
 * {"id":"<uuid>","orgId":"T","workflow":"name@1","status":"running|parked|completed|failed|cancelled",
 *  "input":{…},"cost":6.4,"budget":100|null,"error":null|{"code":"…","message":"…","stepId":"…"?},
 *  "createdAt":"<ISO 8601>","finishedAt":"<ISO 8601>"|null,
 *  "steps":[{"id":"research","kind":"workflow|delegation","status":"pending|dispatched|retrying|parked|waiting|completed|failed|cancelled",
 *            "destination":"role:researcher","attempts":1,"cost":2,"output":…|null,"error":null|{"code":"…","message":"…"},
 *            "approvalId":"<uuid>"|null,"awaiting":[{"correlationId":"critique","delegateStepId":"research.d2","arrived":false}]}]}
 * ```
 * Workflow steps come in definition order, then delegation steps (`<origin step>.d<n>`). A step's `awaiting` lists
 * the sub-queries its handler has not yet been handed a reply for, in the order asked (`arrived`: received and
 * queued behind the running turn); empty unless the step fanned out and still waits. A task started by a
 * verified delivery also shows `"replyTo":{"kind":"forge_comment|slack_thread|cairn_comment","display":"…"}|null`
 * and `"replies":[{"id","state","code","message","permalink","addressDisplay","actor","stepId","createdAt",
 * "finishedAt"}]` (never the text, never a credential).
 */
import { InvalidArgumentError, type Command } from "commander";
import { intOption, parseJsonOption, secondsOption, uuidOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import { CommandExit, type CliContext } from "../context.js";
import { ExitCode, formatNumber, formatTable, formatTime } from "../output.js";
import { TENANT_OPTION_HELP, withTenantApi } from "../remote/session.js";
import { DEFAULT_TASK_PAGE_SIZE, MAX_TASK_PAGE_SIZE, type TaskStatus, type TaskView, type TenantApi } from "../remote/tenant-api.js";
import { ErrorCode, isSwitchyardError } from "../../errors.js";
import { taskSource } from "../task-stream.js";
import { formatStepLine, watchTask } from "../task-watch.js";

interface StartOptions {
  tenant?: string;
  input?: string;
  idempotencyKey?: string;
  wait?: boolean;
  timeout?: number;
  explainAfter: number;
  json?: boolean;
}

/** Seconds without any change before `--wait` / `task watch` say why the task does not move. */
const DEFAULT_EXPLAIN_AFTER_S = 10;

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
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--input <json>", "task input as JSON", undefined)
    .option("--idempotency-key <key>", "start at most one task per key")
    .option("--wait", "wait for the task to finish, printing step progress")
    .option("--timeout <seconds>", "with --wait: give up after this long", secondsOption)
    .option("--explain-after <seconds>", "with --wait: say why the task does not move after this long without a change", secondsOption, DEFAULT_EXPLAIN_AFTER_S)
    .option("--json", "print the task as JSON (TaskView) on the last line")
    .action(
      run(async (ctx, workflow: string, options: StartOptions) => {
        const input = parseJsonOption("--input", options.input);
        await withTenantApi(ctx, options.tenant, async (api) => {
          const started = await api.startTask({
            workflow,
            input,
            ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
          });
          const say = (line: string) => (options.json ? ctx.note(line) : ctx.print(line));
          say(`${started.created ? "started" : "already started (same idempotency key)"}: task ${started.taskId} of ${started.workflow}`);
          if (!options.wait) {
            if (options.json) ctx.printJson(await api.getTask(started.taskId));
            else ctx.print(started.taskId);
            return;
          }
          const tasks = taskSource(api, started.taskId);
          const final = await waitWithProgress(ctx, say, { tasks, api, tenant: options.tenant, taskId: started.taskId, timeoutSeconds: options.timeout, explainAfterSeconds: options.explainAfter }).finally(() => tasks.close());
          if (options.json) ctx.printJson(final);
          else ctx.print(started.taskId);
          if (final.status !== "completed") throw new CommandExit(ExitCode.Failed);
        });
      }),
    );

  /**
   * `task watch ID --tenant T [--timeout SECONDS] [--explain-after SECONDS] [--json]` — follows a running task:
   * a line per step change (as `task start --wait`), and after `--explain-after` seconds (default 10) without a
   * change, why it does not move ("no harness has read role:echo for 30 s; HARNESS_ENABLED is off for role:echo",
   * "parked on approval …", "waiting on foreign:KEY (bridge …, last state working)", "held: COORDINATOR_ENABLED
   * is off for tenant T"), again whenever the reason changes. Exits 0 when the task completes, 1 when it fails, is
   * cancelled or `--timeout` passes. With `--json` the last stdout line is the TaskView and the rest goes to
   * stderr. It follows the API's streaming Watch and asks the API why (TaskService.Explain), in-process without `--url`.
   */
  task
    .command("watch")
    .description("follow a task's steps and say why it does not move")
    .argument("<id>", "task id", uuidOption)
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--timeout <seconds>", "give up after this long", secondsOption)
    .option("--explain-after <seconds>", "say why the task does not move after this long without a change", secondsOption, DEFAULT_EXPLAIN_AFTER_S)
    .option("--json", "print the task as JSON (TaskView) on the last line")
    .action(
      run(async (ctx, id: string, options: { tenant?: string; timeout?: number; explainAfter: number; json?: boolean }) => {
        await withTenantApi(ctx, options.tenant, async (api) => {
          const say = (line: string) => (options.json ? ctx.note(line) : ctx.print(line));
          const tasks = taskSource(api, id);
          const final = await waitWithProgress(ctx, say, { tasks, api, tenant: options.tenant, taskId: id, timeoutSeconds: options.timeout, explainAfterSeconds: options.explainAfter }).finally(() => tasks.close());
          if (options.json) ctx.printJson(final);
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
    .argument("<id>", "task id", uuidOption)
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--json", "print the task as JSON (TaskView)")
    .action(
      run(async (ctx, id: string, options: { tenant?: string; json?: boolean }) => {
        const view = await withTenantApi(ctx, options.tenant, (api) => api.getTask(id));
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
    .argument("<id>", "task id", uuidOption)
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--reason <reason>", "why (recorded in the audit log)", "cancelled from the CLI")
    .option("--actor <actor>", "who cancels (recorded in the audit log)", "cli")
    .option("--json", "print the task as JSON (TaskView)")
    .action(
      run(async (ctx, id: string, options: { tenant?: string; reason: string; actor: string; json?: boolean }) => {
        await withTenantApi(ctx, options.tenant, async (api) => {
          const { task: after, alreadyFinished } = await api.cancelTask(id, options.actor, options.reason);
          if (options.json) return ctx.printJson(after);
          if (alreadyFinished) ctx.print(`task ${id} is already ${after.status}; nothing to cancel`);
          else ctx.print(`task ${id}: ${after.status}`);
        });
      }),
    );

  /**
   * `task reply ID --text TEXT [--tenant T] [--idempotency-key K] [--actor A] [--json]` — posts TEXT to the
   * task's reply address (the conversation it came from) with the tenant's connection, for a running task or one
   * that ended within the grace window. Governed, audited, bounded like a worker's `ctx.reply`. Prints the
   * outcome (`sent` with the permalink, `parked` with the approval, `refused`/`failed`/`unknown` with the code);
   * exits 0 for sent and parked, 1 otherwise. JSON: `{"status","replyId","code"?,"message"?,"permalink"?,
   * "approvalId"?}`. A repeat with the same key posts nothing and prints the first outcome.
   */
  task
    .command("reply")
    .description("post text to the conversation a task came from")
    .argument("<id>", "task id", uuidOption)
    .requiredOption("--text <text>", "the words to post (at most 16 KiB)")
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--idempotency-key <key>", "post at most once per key (default: sha256 of task id and text)")
    .option("--actor <actor>", "who posts (recorded in the audit log; remote mode records the API key)", "cli")
    .option("--json", "print the outcome as JSON")
    .action(
      run(async (ctx, id: string, options: { tenant?: string; text: string; idempotencyKey?: string; actor: string; json?: boolean }) => {
        const outcome = await withTenantApi(ctx, options.tenant, (api) =>
          api.replyTask({ taskId: id, text: options.text, actor: options.actor, ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}) }),
        );
        if (options.json) ctx.printJson(outcome);
        else {
          const detail = outcome.permalink ?? (outcome.approvalId ? `approval ${outcome.approvalId}` : outcome.code ? `${outcome.code}: ${outcome.message ?? ""}` : "");
          ctx.print(`reply ${outcome.replyId || "(none)"}: ${outcome.status}${detail ? ` — ${detail}` : ""}`);
        }
        if (outcome.status !== "sent" && outcome.status !== "parked") throw new CommandExit(ExitCode.Failed);
      }),
    );

  /**
   * `task list [--tenant T] [--status S[,S…]] [--workflow NAME[@V]] [--since SECONDS] [--limit N] [--page-token TOKEN] [--json]` —
   * the tenant's tasks, newest first, without steps. When there are more, the next page's token is printed on
   * stderr (human form) or in `nextPageToken`.
   *
   * JSON: `{"tasks":[{"id":"<uuid>","workflow":"name@1","status":"…","cost":1.5,"budget":null,"error":null,
   * "createdAt":"<ISO 8601>","finishedAt":"<ISO 8601>"|null}],"nextPageToken":"…"|null}`
   */
  task
    .command("list")
    .description("list the tenant's tasks, newest first")
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--status <statuses>", `only these statuses, comma-separated (${TASK_STATUSES.join(", ")})`, statusesOption)
    .option("--workflow <ref>", "only tasks of this workflow: NAME (any version) or NAME@VERSION")
    .option("--since <seconds>", "only tasks created in the last this many seconds", secondsOption)
    .option("--limit <n>", `at most this many (1..${MAX_TASK_PAGE_SIZE})`, intOption(1), DEFAULT_TASK_PAGE_SIZE)
    .option("--page-token <token>", "continue after the previous page")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; status?: TaskStatus[]; workflow?: string; since?: number; limit: number; pageToken?: string; json?: boolean }) => {
        const page = await withTenantApi(ctx, options.tenant, (api) =>
          api.listTasks({
            pageSize: options.limit,
            ...(options.status ? { statuses: options.status } : {}),
            ...(options.workflow !== undefined ? { workflow: options.workflow } : {}),
            ...(options.since !== undefined ? { createdAfter: new Date(Date.now() - options.since * 1000) } : {}),
            ...(options.pageToken !== undefined ? { pageToken: options.pageToken } : {}),
          }),
        );
        if (options.json) return ctx.printJson(page);
        ctx.print(
          formatTable(
            ["id", "workflow", "status", "cost", "created", "finished", "error"],
            page.tasks.map((t) => [t.id, t.workflow, t.status, t.cost, formatTime(t.createdAt), formatTime(t.finishedAt), t.error ? `${t.error.code}: ${t.error.message}` : ""]),
          ),
        );
        if (page.nextPageToken) ctx.note(`more tasks: add --page-token ${page.nextPageToken}`);
      }),
    );
}

const TASK_STATUSES: readonly TaskStatus[] = ["running", "parked", "completed", "failed", "cancelled"];

function statusesOption(value: string): TaskStatus[] {
  const statuses = value.split(",").map((s) => s.trim());
  const unknown = statuses.filter((s) => !(TASK_STATUSES as readonly string[]).includes(s));
  if (unknown.length > 0) throw new InvalidArgumentError(`unknown status ${unknown.join(", ")}; expected ${TASK_STATUSES.join(", ")}`);
  return statuses as TaskStatus[];
}

async function waitWithProgress(
  ctx: CliContext,
  say: (line: string) => void,
  options: {
    tasks: Parameters<typeof watchTask>[0]["tasks"];
    api: Pick<TenantApi, "explainTask">;
    tenant: string | undefined;
    taskId: string;
    timeoutSeconds: number | undefined;
    explainAfterSeconds: number;
  },
): Promise<TaskView> {
  const stop = ctx.shutdownSignal();
  // TaskService.Explain, in either mode: the facts are read where the handlers run.
  const explainer = { explain: (view: TaskView) => options.api.explainTask(view.id) };
  let explained = "";
  try {
    const final = await watchTask({
      tasks: options.tasks,
      orgId: options.tenant ?? "",
      taskId: options.taskId,
      signal: stop.signal,
      ...(options.timeoutSeconds !== undefined ? { timeoutMs: options.timeoutSeconds * 1000 } : {}),
      stallMs: options.explainAfterSeconds * 1000,
      onStall: async (view, stalledMs) => {
        // The watch matters more than its diagnosis: a failed explanation is said (once) and the watch goes on.
        const lines = await explainer.explain(view).catch((error: unknown) => [`(cannot explain the stall: ${(error as Error).message})`]);
        // Said once per reason: a long stall repeats nothing until the reason changes (not merely its age).
        const text = lines.join("\n").replace(/\d+ (s|min|h)\b/g, "");
        if (text === explained || lines.length === 0) return;
        explained = text;
        say(`no change for ${Math.round(stalledMs / 1000)} s:`);
        for (const line of lines) say(`  ${line}`);
      },
      onStep: (step) => {
        explained = "";
        say(formatStepLine(step));
        if (step.status === "parked" && step.approvalId) {
          const tenantFlag = options.tenant !== undefined ? ` --tenant ${options.tenant}` : "";
          say(`  decide with: switchyard approval approve ${step.approvalId}${tenantFlag}   (or: approval deny …)`);
        }
      },
    }).catch(async (error: unknown) => {
      // A timeout before the first explanation still says why: the hint the operator was waiting for.
      if (isSwitchyardError(error, ErrorCode.Timeout) && explained === "") {
        const lines = await explainer.explain(await options.tasks.get(options.tenant ?? "", options.taskId)).catch(() => []);
        for (const line of lines) say(`  ${line}`);
      }
      throw error;
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
      view.steps.map((s) => [s.id, s.status, s.attempts, s.cost, s.destination, s.error ? `${s.error.code}: ${s.error.message}` : s.approvalId ? `approval ${s.approvalId}` : s.queuedReason ?? ""]),
    ),
  );
  if (view.replyTo) ctx.print(`\nreplies go to ${view.replyTo.display} (${view.replyTo.kind})`);
  if (view.replies.length > 0) {
    ctx.print(
      formatTable(
        ["reply", "state", "actor", "step", "created", "note"],
        view.replies.map((r) => [r.id, r.state, r.actor, r.stepId ?? "", formatTime(r.createdAt), r.permalink ?? (r.code ? `${r.code}: ${r.message ?? ""}` : "")]),
      ),
    );
  }
}
