/**
 * Progress-based waiting (the tests' and `switchyard/testing`'s): a wait fails when nothing has moved for `stallMs`, never after a fixed total. On a loaded
 * machine work is slow but keeps moving, and the wait goes on; when the work is stuck, the wait fails soon after it
 * stopped moving and says what is stuck (which tasks and steps, in which state). So the suite tells "slow" from
 * "stuck". Tests that use these waits need a vitest timeout well above `stallMs` (the global one is).
 */
import { TERMINAL_TASK_STATUSES } from "../core/model.js";
import type { TaskView } from "../tasks/tasks.js";
import type { Queryable } from "../store/db.js";
import type { TaskProgressStore } from "../store/tasks/task-progress-store.js";
import { createPostgresTaskProgressStore } from "../store/tasks/postgres-task-progress-store.js";

/** How long nothing may move before a wait fails (ms), unless the wait says otherwise. */
export const DEFAULT_STALL_MS = 20_000;

export interface WaitForProgressOptions<T> {
  /** What is awaited, for the failure message: "every task to finish". */
  what: string;
  /** Reads the state now. Any change of it (compared as JSON, or by `key`) is progress. */
  progress: () => T | Promise<T>;
  /** Whether the state read is the one awaited. */
  done: (state: T) => boolean;
  /** The part of the state whose change counts as progress. @defaultValue the whole state, as JSON */
  key?: (state: T) => string;
  /** Fail when the state has not changed for this long (ms). @defaultValue DEFAULT_STALL_MS */
  stallMs?: number;
  /** Pause between reads (ms). @defaultValue 100 */
  intervalMs?: number;
  /** Says what is stuck, for the failure message (e.g. the unfinished tasks and their steps). */
  describeStuck?: (state: T) => string | Promise<string>;
}

/** Resolves with the first state `done` accepts; rejects once the state stopped changing for `stallMs`. */
export async function waitForProgress<T>(options: WaitForProgressOptions<T>): Promise<T> {
  const stallMs = options.stallMs ?? DEFAULT_STALL_MS;
  const key = options.key ?? ((state: T) => JSON.stringify(state));
  let lastKey: string | undefined;
  let lastMoved = Date.now();
  for (;;) {
    const state = await options.progress();
    if (options.done(state)) return state;
    const now = key(state);
    if (now !== lastKey) {
      lastKey = now;
      lastMoved = Date.now();
    } else if (Date.now() - lastMoved >= stallMs) {
      const stuck = options.describeStuck ? await options.describeStuck(state) : `last state: ${now}`;
      throw new Error(`stuck waiting for ${options.what}: nothing moved for ${Math.round((Date.now() - lastMoved) / 1000)} s\n${stuck}`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 100));
  }
}

function isFinished(view: Pick<TaskView, "status">): boolean {
  return TERMINAL_TASK_STATUSES.includes(view.status);
}

/** `task T is running: step a (role:echo) dispatched, attempt 1; step b (role:echo) pending` */
export function describeTask(view: TaskView): string {
  const steps = view.steps.map((s) => `step ${s.id} (${s.destination}) ${s.status}${s.attempts > 0 ? `, attempt ${s.attempts}` : ""}`);
  return `task ${view.id} is ${view.status}: ${steps.join("; ") || "no steps"}`;
}

export interface WaitForTaskOptions {
  /** The task statuses awaited. @defaultValue any terminal one (completed, failed, cancelled) */
  until?: (view: TaskView) => boolean;
  stallMs?: number;
  intervalMs?: number;
}

/** Waits until one task finishes (or reaches what `until` accepts) while its task or step states keep changing. */
export function waitForTask(tasks: { get(orgId: string, taskId: string): Promise<TaskView> }, orgId: string, taskId: string, options: WaitForTaskOptions = {}): Promise<TaskView> {
  return waitForProgress({
    what: `task ${taskId} to finish`,
    progress: () => tasks.get(orgId, taskId),
    done: options.until ?? isFinished,
    key: (view) => JSON.stringify([view.status, view.steps.map((s) => [s.id, s.status, s.attempts, s.approvalId])]),
    describeStuck: describeTask,
    ...(options.stallMs !== undefined ? { stallMs: options.stallMs } : {}),
    ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
  });
}

export interface TasksState {
  /** Tasks per status, e.g. `{ completed: 290, running: 10 }`. */
  tasks: Record<string, number>;
  /** Steps per status, and every attempt made: a retry is progress too. */
  steps: Record<string, number>;
  attempts: number;
}

/** Task and step counts of the whole database, or of one tenant. */
export async function readTasksState(db: Queryable, orgId?: string, store: TaskProgressStore = createPostgresTaskProgressStore()): Promise<TasksState> {
  const tasks = await store.taskCounts(db, orgId);
  const steps = await store.stepCounts(db, orgId);
  return {
    tasks: Object.fromEntries(tasks.map((r) => [r.status, r.n])),
    steps: Object.fromEntries(steps.map((r) => [r.status, r.n])),
    attempts: steps.reduce((sum, r) => sum + r.attempts, 0),
  };
}

/** Up to `limit` unfinished tasks with their unfinished steps: what a stuck wait reports. */
export async function describeUnfinishedTasks(db: Queryable, orgId?: string, limit = 10, store: TaskProgressStore = createPostgresTaskProgressStore()): Promise<string> {
  const rows = await store.unfinished(db, limit, orgId);
  if (rows.length === 0) return "no unfinished task";
  return rows.map((r) => `task ${r.id} is ${r.status}: ${r.steps ?? "no unfinished step"}`).join("\n");
}

export interface WaitForTasksOptions {
  /** Only this tenant's tasks. @defaultValue every task in the database */
  orgId?: string;
  /** How many finished tasks are awaited. @defaultValue every task there is */
  expected?: number;
  stallMs?: number;
  intervalMs?: number;
  /** How the counts are read. @defaultValue the Postgres adapter */
  store?: TaskProgressStore;
}

/** Waits until every task (or `expected` of them) has finished, as long as tasks and steps keep moving. */
export function waitForTasks(db: Queryable, options: WaitForTasksOptions = {}): Promise<TasksState> {
  const finished = (state: TasksState) => (state.tasks.completed ?? 0) + (state.tasks.failed ?? 0) + (state.tasks.cancelled ?? 0);
  const total = (state: TasksState) => Object.values(state.tasks).reduce((sum, n) => sum + n, 0);
  return waitForProgress({
    what: options.expected === undefined ? "every task to finish" : `${options.expected} tasks to finish`,
    progress: () => readTasksState(db, options.orgId, options.store),
    done: (state) => total(state) > 0 && finished(state) === (options.expected ?? total(state)),
    describeStuck: async (state) => `tasks ${JSON.stringify(state.tasks)}, steps ${JSON.stringify(state.steps)}; unfinished:\n${await describeUnfinishedTasks(db, options.orgId, undefined, options.store)}`,
    ...(options.stallMs !== undefined ? { stallMs: options.stallMs } : {}),
    intervalMs: options.intervalMs ?? 200,
  });
}
