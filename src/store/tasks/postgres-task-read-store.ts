/**
 * The Postgres adapter of the gateway's task read models (task-read-store.ts): tables `tasks`, `steps` and
 * `audit_log`, one SQL operation per function.
 */
import type { Queryable } from "../db.js";
import type { AuditStepRow, StepLink, TaskPageQuery, TaskPageRow, TaskReadStore } from "./task-read-store.js";

export function createPostgresTaskReadStore(): TaskReadStore {
  return { page: readTaskPage, auditSteps: readAuditStepRows, stepLinks: readStepLinks, fingerprints: readTaskFingerprints };
}

export async function readTaskPage(db: Queryable, orgId: string, query: TaskPageQuery): Promise<TaskPageRow[]> {
  const { rows } = await db.query(
    `SELECT id, workflow_name, workflow_version, status, budget, cost, error, created_at, finished_at, created_at::text AS cursor_at
     FROM tasks
     WHERE org_id = $1
       AND ($2::text[] IS NULL OR status = ANY($2::text[]))
       AND ($3::text IS NULL OR workflow_name = $3)
       AND ($4::int IS NULL OR workflow_version = $4)
       AND ($5::timestamptz IS NULL OR (created_at, id) < ($5::timestamptz, $6::uuid))
       AND ($8::timestamptz IS NULL OR created_at >= $8::timestamptz)
       AND ($9::timestamptz IS NULL OR created_at < $9::timestamptz)
     ORDER BY created_at DESC, id DESC
     LIMIT $7`,
    [orgId, query.statuses, query.workflowName, query.workflowVersion, query.after?.at ?? null, query.after?.id ?? null, query.limit, query.createdAfter, query.createdBefore],
  );
  return rows.map((row) => ({
    id: row.id,
    workflowName: row.workflow_name,
    workflowVersion: row.workflow_version,
    status: row.status,
    budget: row.budget,
    cost: row.cost,
    error: row.error,
    createdAt: row.created_at as Date,
    finishedAt: (row.finished_at as Date | null) ?? null,
    cursorAt: row.cursor_at,
  }));
}

export async function readAuditStepRows(db: Queryable, orgId: string, taskId: string): Promise<AuditStepRow[]> {
  const { rows } = await db.query<AuditStepRow>(
    `SELECT seq::float8 AS seq, action, actor, destination, verdict, rule, reason, cost, step_id AS "stepId", at_ms::float8 AS "atMs"
     FROM audit_log WHERE org_id = $1 AND task_id = $2 ORDER BY seq`,
    [orgId, taskId],
  );
  return rows;
}

export async function readStepLinks(db: Queryable, orgId: string, taskId: string): Promise<StepLink[]> {
  const { rows } = await db.query<{ step_id: string; depth: number; delegation: StepLink["delegation"] }>(
    "SELECT step_id, depth, delegation FROM steps WHERE org_id = $1 AND task_id = $2",
    [orgId, taskId],
  );
  return rows.map((row) => ({ stepId: row.step_id, depth: row.depth, delegation: row.delegation }));
}

const FINGERPRINT_SQL = `
  SELECT t.id::text AS id,
         t.status || '|' || coalesce((
           SELECT string_agg(s.step_id || ':' || s.status || ':' || s.attempt || ':' || coalesce(s.approval_id::text, ''), ',' ORDER BY s.step_id)
           FROM steps s WHERE s.task_id = t.id), '') AS fingerprint
  FROM tasks t WHERE t.id = ANY($1::uuid[])`;

/** Not async: the hub polls often, and this adds no step of its own between the query and the hub. */
export function readTaskFingerprints(db: Queryable, taskIds: readonly string[]): Promise<Map<string, string>> {
  return db.query<{ id: string; fingerprint: string }>(FINGERPRINT_SQL, [taskIds]).then(({ rows }) => new Map(rows.map((r) => [r.id, r.fingerprint])));
}
