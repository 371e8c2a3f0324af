/**
 * The task service's port (issue 27 §2, tasks and steps): what tasks/ writes when tasks start (the task rows,
 * their pending steps, the tasks an idempotency key names already, the start envelopes for the shard owner's inbox)
 * and what a task's view reads. The engine's own reads and writes of the same tables are its ports'
 * (store/engine/engine-store.ts). The task service and `getTaskView` take it; the Postgres adapter is
 * postgres-task-store.ts beside this file.
 */
import type { StepRecord, TaskRecord } from "../../core/model.js";
import type { Queryable } from "../db.js";
import type { OutboxRow } from "../engine/engine-store.js";

/** A task row as its view shows it: the record's fields, with the times as dates and the address as stored. */
export type TaskViewRow = Omit<TaskRecord, "finishedAtMs" | "replyTo"> & {
  createdAt: Date;
  finishedAt: Date | null;
  /** As stored: the view validates it again. */
  replyTo: unknown;
};

export interface TaskStore {
  /**
   * Inserts new tasks in one statement; answers the ids inserted (not those whose idempotency key was taken) with
   * their creation time. `traceparent`: the task's root trace context, when tracing is on.
   */
  insertTasks(client: Queryable, tasks: ReadonlyArray<{ task: TaskRecord; idempotencyKey: string | null; traceparent?: string | undefined }>): Promise<Map<string, Date>>;
  /** Writes steps (insert or update) in one statement. */
  saveSteps(client: Queryable, steps: readonly StepRecord[]): Promise<void>;
  /** The tasks of the tenant that have these idempotency keys, by key. */
  idsByIdempotencyKey(client: Queryable, orgId: string, keys: readonly string[]): Promise<Map<string, string>>;
  /** Writes signed envelopes to the transactional outbox, in the caller's transaction; answers the rows to publish. */
  insertOutbox(client: Queryable, rows: ReadonlyArray<{ orgId: string; stream: string; envelopeId: string; bytes: Uint8Array }>): Promise<OutboxRow[]>;
  /** The tenant's task, or undefined (also for another tenant's id). */
  task(db: Queryable, orgId: string, taskId: string): Promise<TaskViewRow | undefined>;
  /** The task's steps, delegations first, then by last change. */
  steps(db: Queryable, taskId: string): Promise<StepRecord[]>;
  /** Why each of the task's held steps waits, by step id. */
  heldReasons(db: Queryable, taskId: string): Promise<Map<string, string>>;
}
