/**
 * Watches a task by polling until it reaches a terminal status, reporting each step change once, and — when
 * nothing changed for `stallMs` — asking `onStall` to say why. Used by `task start --wait`, `task watch` and the
 * demo.
 */
import { sleep } from "../sleep.js";
import type { StepView, TaskService, TaskView } from "../tasks/tasks.js";
import { TERMINAL_STEP_STATUSES, TERMINAL_TASK_STATUSES } from "../core/model.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { formatNumber } from "./output.js";

export interface WatchTaskOptions {
  tasks: Pick<TaskService, "get">;
  orgId: string;
  taskId: string;
  /** @defaultValue 200 */
  intervalMs?: number;
  /** Aborting stops the watch with CANCELLED (`details.interrupted`); the task itself carries on. */
  signal?: AbortSignal;
  /** Give up with TIMEOUT after this long (ms). @defaultValue no limit */
  timeoutMs?: number;
  /** Called for every step whose status or attempt count changed since the last poll (new steps included). */
  onStep?(step: StepView): void;
  /** Called after each poll in which the task status or any step changed (and after the first); may act, e.g. approve. */
  onChange?(view: TaskView): void | Promise<void>;
  /** After this long without any change, `onStall` is called, then again every `stallMs` while still stalled. */
  stallMs?: number;
  /** Says why the task does not move (see src/diagnosis/); its failure ends the watch. */
  onStall?(view: TaskView, stalledMs: number): void | Promise<void>;
}

export function isTerminal(view: TaskView): boolean {
  return TERMINAL_TASK_STATUSES.includes(view.status);
}

export async function watchTask(options: WatchTaskOptions): Promise<TaskView> {
  const interval = options.intervalMs ?? 200;
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
  const seen = new Map<string, string>();
  let lastStatus: string | undefined;
  let lastChangeAt = Date.now();
  let lastStallCallAt = 0;
  for (;;) {
    if (options.signal?.aborted) {
      throw new SwitchyardError(ErrorCode.Cancelled, `stopped watching task ${options.taskId}; it carries on`, {
        details: { interrupted: true, taskId: options.taskId },
      });
    }
    const view = await options.tasks.get(options.orgId, options.taskId);
    let changed = view.status !== lastStatus;
    lastStatus = view.status;
    const changes = view.steps.filter((step) => {
      const key = `${step.status}/${step.attempts}`;
      if (seen.get(step.id) === key) return false;
      seen.set(step.id, key);
      return true;
    });
    for (const step of inLikelyOrder(changes)) options.onStep?.(step);
    changed ||= changes.length > 0;
    if (changed) await options.onChange?.(view);
    if (isTerminal(view)) return view;
    const now = Date.now();
    if (changed) lastChangeAt = now;
    else if (options.onStall && options.stallMs !== undefined && now - lastChangeAt >= options.stallMs && now - lastStallCallAt >= options.stallMs) {
      lastStallCallAt = now;
      await options.onStall(view, now - lastChangeAt);
    }
    if (Date.now() >= deadline) {
      throw new SwitchyardError(ErrorCode.Timeout, `task ${options.taskId} is still ${view.status} after ${formatNumber(options.timeoutMs! / 1000)} s`, {
        details: { taskId: options.taskId, status: view.status },
      });
    }
    await sleep(Math.min(interval, Math.max(0, deadline - Date.now())), options.signal);
  }
}

/**
 * Several changes seen in one poll happened in some order the view does not record. A finished delegation
 * precedes whatever its origin did next, and a new delegation follows its origin standing down; so: finished
 * delegation steps, then workflow steps, then the other delegation steps. Stable within each group.
 */
function inLikelyOrder(steps: readonly StepView[]): StepView[] {
  const rank = (s: StepView) => (s.kind === "workflow" ? 1 : TERMINAL_STEP_STATUSES.includes(s.status) ? 0 : 2);
  return [...steps].sort((a, b) => rank(a) - rank(b));
}

/** `waiting for replies: critique, fact-check`, the correlation ids the step's handler still awaits, in the order asked. */
function waitingFor(step: StepView): string {
  if (step.awaiting.length === 0) return "waiting for delegated sub-queries";
  const ids = step.awaiting.map((a) => a.correlationId);
  const shown = ids.length > 5 ? [...ids.slice(0, 5), `… (${ids.length - 5} more)`] : ids;
  return `waiting for ${ids.length === 1 ? "reply" : `${ids.length} replies`}: ${shown.join(", ")}`;
}

/** `step research (role:researcher): dispatched, attempt 1` plus what is special about the status. */
export function formatStepLine(step: StepView): string {
  const where = step.kind === "delegation" ? `${step.destination}, delegated` : step.destination;
  let line = `step ${step.id} (${where}): ${step.status}`;
  if (step.attempts > 0) line += `, attempt ${step.attempts}`;
  if (step.status === "parked" && step.approvalId) line += ` — waiting for approval ${step.approvalId}`;
  if (step.status === "waiting") line += ` — ${waitingFor(step)}`;
  if (step.status === "held") line += ` — ${step.queuedReason ?? "queued behind a dispatch limit"}`;
  if (step.status === "completed" && step.cost > 0) line += `, cost ${formatNumber(step.cost)}`;
  if (step.error && (step.status === "failed" || step.status === "retrying")) line += ` — ${step.error.code}: ${step.error.message}`;
  return line;
}

