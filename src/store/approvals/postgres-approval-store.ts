/**
 * The Postgres adapter of the ApprovalStore port (approval-store.ts): approval rows, opened when a hop's verdict is
 * requires_approval (with a deadline, `expires_at`), closed exactly once by a decision — a person through the API
 * or CLI, a signed link, or the expiry sweep — recorded in `decided_via`. One SQL operation per function.
 */
import { tenantSqlClause, tenantSqlFilter, type TenantSelection } from "../../flags/flag-types.js";
import type { Queryable } from "../db.js";
import type { ApprovalSpec } from "../../core/model.js";
import type { OwnedShards } from "../../coordinator/shard-ownership.js";
import { shardSqlClause, shardSqlParams } from "../../bus/shards.js";
import type { ApprovalDecision, ApprovalDecisionVia, ApprovalRow, ApprovalStore, OverdueApproval } from "./approval-store.js";

export function createPostgresApprovalStore(): ApprovalStore {
  return {
    insert: insertApprovals,
    close: closeApprovals,
    list: listApprovals,
    get: getApproval,
    closeUnparked: closeUnparkedApproval,
    recordDecisionVia,
    listOverdue: listOverdueApprovals,
  };
}

export async function insertApprovals(client: Queryable, approvals: readonly ApprovalSpec[]): Promise<void> {
  if (approvals.length === 0) return;
  await client.query(
    `INSERT INTO approvals (id, org_id, task_id, step_id, action, destination, rule, reason, cost, expires_at, reply_id)
     SELECT id, org_id, task_id, step_id, action, destination, rule, reason, cost, to_timestamp(expires_at_ms / 1000.0), reply_id
     FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, org_id text, task_id uuid, step_id text, action text,
       destination text, rule text, reason text, cost double precision, expires_at_ms bigint, reply_id uuid)
     ON CONFLICT (id) DO NOTHING`,
    [
      JSON.stringify(
        approvals.map((a) => ({
          id: a.id,
          org_id: a.orgId,
          task_id: a.taskId,
          step_id: a.stepId,
          action: a.action,
          destination: a.destination,
          rule: a.rule,
          reason: a.reason,
          cost: a.cost,
          expires_at_ms: a.expiresAtMs,
          reply_id: a.replyId ?? null,
        })),
      ),
    ],
  );
}

export async function closeApprovals(client: Queryable, decisions: readonly ApprovalDecision[]): Promise<void> {
  if (decisions.length === 0) return;
  await client.query(
    `UPDATE approvals a SET status = x.status, decided_by = x.actor, decision_reason = x.reason, decided_at = now()
     FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, status text, actor text, reason text)
     WHERE a.id = x.id AND a.status = 'pending'`,
    [JSON.stringify(decisions.map((d) => ({ id: d.approvalId, status: d.approved ? "approved" : "denied", actor: d.actor, reason: d.reason })))],
  );
}

const COLUMNS = `id, org_id, task_id, step_id, action, destination, rule, reason, cost, status, decided_by, decision_reason,
  created_at, decided_at, expires_at, decided_via`;

function toApproval(row: Record<string, unknown>): ApprovalRow {
  return {
    id: row.id as string,
    orgId: row.org_id as string,
    taskId: row.task_id as string,
    stepId: row.step_id as string,
    action: row.action as string,
    destination: row.destination as string,
    rule: row.rule as string,
    reason: row.reason as string,
    cost: row.cost as number,
    status: row.status as ApprovalRow["status"],
    decidedBy: (row.decided_by as string | null) ?? null,
    decisionReason: (row.decision_reason as string | null) ?? null,
    createdAt: (row.created_at as Date).toISOString(),
    decidedAt: row.decided_at ? (row.decided_at as Date).toISOString() : null,
    expiresAt: row.expires_at ? (row.expires_at as Date).toISOString() : null,
    decidedVia: (row.decided_via as ApprovalDecisionVia | null) ?? null,
  };
}

export async function listApprovals(client: Queryable, orgId: string, options: { status?: ApprovalRow["status"]; taskId?: string } = {}): Promise<ApprovalRow[]> {
  const { rows } = await client.query(
    `SELECT ${COLUMNS} FROM approvals WHERE org_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::uuid IS NULL OR task_id = $3)
     ORDER BY created_at, id`,
    [orgId, options.status ?? null, options.taskId ?? null],
  );
  return rows.map(toApproval);
}

export async function getApproval(client: Queryable, orgId: string, approvalId: string, forUpdate = false): Promise<ApprovalRow | undefined> {
  const { rows } = await client.query(`SELECT ${COLUMNS} FROM approvals WHERE org_id = $1 AND id = $2${forUpdate ? " FOR UPDATE" : ""}`, [orgId, approvalId]);
  return rows[0] ? toApproval(rows[0]) : undefined;
}

export async function closeUnparkedApproval(client: Queryable, approvalId: string, decidedBy: string): Promise<void> {
  await client.query("UPDATE approvals SET status = 'denied', decided_by = $2, decision_reason = 'step no longer parked', decided_at = now() WHERE id = $1", [
    approvalId,
    decidedBy,
  ]);
}

/**
 * Records how the decision that closed an approval arrived. Written in the deciding transaction, after the engine
 * closed the row; only a row this transaction decided has no `decided_via` yet.
 */
export async function recordDecisionVia(client: Queryable, orgId: string, approvalId: string, via: ApprovalDecisionVia): Promise<void> {
  await client.query("UPDATE approvals SET decided_via = $3 WHERE org_id = $1 AND id = $2 AND status <> 'pending' AND decided_via IS NULL", [
    orgId,
    approvalId,
    via,
  ]);
}

/**
 * Pending approvals whose deadline is at or before `nowMs`, oldest deadline first (across tenants: an operator
 * query), of the tenants `tenants` selects (all when absent).
 */
export async function listOverdueApprovals(
  client: Queryable,
  nowMs: number,
  limit: number,
  tenants?: TenantSelection,
  shards?: OwnedShards,
): Promise<OverdueApproval[]> {
  const filter = tenantSqlFilter(tenants);
  if (filter.none || shards?.owned.length === 0) return [];
  const { rows } = await client.query<{ id: string; org_id: string; expires_at: Date }>(
    `SELECT id, org_id, expires_at FROM approvals
     WHERE status = 'pending' AND expires_at <= to_timestamp($1 / 1000.0)
       AND ${tenantSqlClause("org_id", 3)} AND ${shardSqlClause("org_id", 5)}
     ORDER BY expires_at, id LIMIT $2`,
    [nowMs, limit, filter.only, filter.except, ...shardSqlParams(shards)],
  );
  return rows.map((r) => ({ id: r.id, orgId: r.org_id, expiresAt: r.expires_at.toISOString() }));
}
