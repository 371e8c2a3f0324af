/**
 * The Postgres adapter of the progress waits' port (task-progress-store.ts): counts over `tasks` and `steps`, and
 * the unfinished tasks with their steps, one SQL operation per function.
 */
import type { Queryable } from "../db.js";
import type { StatusCount, StepStatusCount, TaskProgressStore, UnfinishedTask } from "./task-progress-store.js";

export function createPostgresTaskProgressStore(): TaskProgressStore {
  return { taskCounts: countTasksByStatus, stepCounts: countStepsByStatus, unfinished: listUnfinishedTasks };
}

const tenantWhere = (orgId: string | undefined) => (orgId === undefined ? { where: "", params: [] } : { where: "WHERE org_id = $1", params: [orgId] });

export async function countTasksByStatus(db: Queryable, orgId?: string): Promise<StatusCount[]> {
  const { where, params } = tenantWhere(orgId);
  const { rows } = await db.query<StatusCount>(`SELECT status, count(*)::int AS n FROM tasks ${where} GROUP BY status ORDER BY status`, params);
  return rows;
}

export async function countStepsByStatus(db: Queryable, orgId?: string): Promise<StepStatusCount[]> {
  const { where, params } = tenantWhere(orgId);
  const { rows } = await db.query<StepStatusCount>(
    `SELECT status, count(*)::int AS n, sum(attempt)::int AS attempts FROM steps ${where} GROUP BY status ORDER BY status`,
    params,
  );
  return rows;
}

export async function listUnfinishedTasks(db: Queryable, limit: number, orgId?: string): Promise<UnfinishedTask[]> {
  const { rows } = await db.query<UnfinishedTask>(
    `SELECT t.id, t.status,
            (SELECT string_agg(format('step %s (%s) %s, attempt %s', s.step_id, s.destination, s.status, s.attempt), '; ' ORDER BY s.step_id)
             FROM steps s WHERE s.task_id = t.id AND s.status NOT IN ('completed', 'failed', 'cancelled')) AS steps
     FROM tasks t WHERE t.status NOT IN ('completed', 'failed', 'cancelled') ${orgId === undefined ? "" : "AND t.org_id = $2"}
     ORDER BY t.created_at LIMIT $1`,
    orgId === undefined ? [limit] : [limit, orgId],
  );
  return rows;
}
