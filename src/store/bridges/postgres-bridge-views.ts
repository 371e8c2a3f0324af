/**
 * The gateway's reads of `a2a_bridge` (the bridges port's `BridgeViews`): a task's bridges for its page, an agent's
 * newest bridges and its open count for ForeignAgentService.Status. Only the columns a status view shows.
 */
import type { Queryable } from "../db.js";
import type { BridgeSummary } from "./bridge-store.js";

const SUMMARY_COLUMNS =
  "id, agent_key, task_id, step_id, attempt, status, last_state, dialect, delivery, foreign_task_id, polls, created_at, sent_at, updated_at, resolved_at";

interface SummaryRow {
  id: string;
  agent_key: string;
  task_id: string;
  step_id: string;
  attempt: number;
  status: string;
  last_state: string | null;
  dialect: string;
  delivery: string | null;
  foreign_task_id: string | null;
  polls: number;
  created_at: Date;
  sent_at: Date | null;
  updated_at: Date;
  resolved_at: Date | null;
}

function toSummary(row: SummaryRow): BridgeSummary {
  return {
    id: row.id,
    agentKey: row.agent_key,
    taskId: row.task_id,
    stepId: row.step_id,
    attempt: row.attempt,
    status: row.status,
    lastState: row.last_state,
    dialect: row.dialect,
    delivery: row.delivery,
    foreignTaskId: row.foreign_task_id,
    polls: row.polls,
    createdAt: row.created_at,
    sentAt: row.sent_at,
    updatedAt: row.updated_at,
    resolvedAt: row.resolved_at,
  };
}

export async function readTaskBridgeSummaries(db: Queryable, orgId: string, taskId: string): Promise<BridgeSummary[]> {
  const { rows } = await db.query<SummaryRow>(`SELECT ${SUMMARY_COLUMNS} FROM a2a_bridge WHERE org_id = $1 AND task_id = $2 ORDER BY created_at, id`, [orgId, taskId]);
  return rows.map(toSummary);
}

export async function readRecentAgentBridges(db: Queryable, orgId: string, agentKey: string, limit: number): Promise<BridgeSummary[]> {
  const { rows } = await db.query<SummaryRow>(
    `SELECT ${SUMMARY_COLUMNS} FROM a2a_bridge WHERE org_id = $1 AND agent_key = $2 ORDER BY created_at DESC, id LIMIT $3`,
    [orgId, agentKey, limit],
  );
  return rows.map(toSummary);
}

export async function countOpenAgentBridges(db: Queryable, orgId: string, agentKey: string): Promise<number> {
  const counted = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM a2a_bridge WHERE org_id = $1 AND agent_key = $2 AND status IN ('pending_send', 'dispatched', 'working')",
    [orgId, agentKey],
  );
  return counted.rows[0]!.n;
}
