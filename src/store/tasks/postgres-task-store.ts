/**
 * The Postgres adapter of the task service's port (task-store.ts): tables `tasks`, `steps` and `held_steps`, one
 * SQL operation per function. Task and step rows are written and read with the engine's own statements
 * (store/engine/postgres-task-store.ts), so a started task is the row the engine reads back.
 */
import type { Queryable } from "../db.js";
import { insertTasks, saveSteps, STEP_COLUMNS, toStep } from "../engine/postgres-task-store.js";
import { insertOutbox } from "../engine/postgres-outbox-store.js";
import type { StepRecord } from "../../core/model.js";
import type { TaskStore, TaskViewRow } from "./task-store.js";

export function createPostgresTaskStore(): TaskStore {
  return { insertTasks, saveSteps, idsByIdempotencyKey: readTaskIdsByKey, insertOutbox, task: readTaskViewRow, steps: readTaskSteps, heldReasons: readHeldReasons };
}

export async function readTaskIdsByKey(client: Queryable, orgId: string, keys: readonly string[]): Promise<Map<string, string>> {
  const found = await client.query<{ id: string; idempotency_key: string }>("SELECT id, idempotency_key FROM tasks WHERE org_id = $1 AND idempotency_key = ANY($2::text[])", [orgId, keys]);
  return new Map(found.rows.map((r) => [r.idempotency_key, r.id]));
}

export async function readTaskViewRow(db: Queryable, orgId: string, taskId: string): Promise<TaskViewRow | undefined> {
  const { rows } = await db.query(
    `SELECT id, org_id, workflow_name, workflow_version, input, status, budget, cost, error, created_at, finished_at, reply_to
     FROM tasks WHERE org_id = $1 AND id = $2`,
    [orgId, taskId],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    id: row.id,
    orgId: row.org_id,
    workflowName: row.workflow_name,
    workflowVersion: row.workflow_version,
    input: row.input,
    status: row.status,
    budget: row.budget,
    cost: row.cost,
    error: row.error,
    createdAt: row.created_at as Date,
    finishedAt: (row.finished_at as Date | null) ?? null,
    replyTo: row.reply_to,
  };
}

export async function readTaskSteps(db: Queryable, taskId: string): Promise<StepRecord[]> {
  const { rows } = await db.query(`SELECT ${STEP_COLUMNS} FROM steps WHERE task_id = $1 ORDER BY kind DESC, updated_at, step_id`, [taskId]);
  return rows.map((r) => toStep(r));
}

export async function readHeldReasons(db: Queryable, taskId: string): Promise<Map<string, string>> {
  const held = await db.query<{ step_id: string; reason: string }>("SELECT step_id, reason FROM held_steps WHERE task_id = $1", [taskId]);
  return new Map(held.rows.map((r) => [r.step_id, r.reason]));
}
