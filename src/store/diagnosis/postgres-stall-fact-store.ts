/**
 * The Postgres adapter of stall diagnosis' port (stall-fact-store.ts): tables `approvals` and `a2a_bridge`, one SQL
 * operation per function.
 */
import type { Queryable } from "../db.js";
import type { ApprovalFactRow, BridgeFactRow, StallFactStore } from "./stall-fact-store.js";

export function createPostgresStallFactStore(): StallFactStore {
  return { approval: readApprovalFact, bridge: readBridgeFact };
}

export async function readApprovalFact(db: Queryable, orgId: string, approvalId: string): Promise<ApprovalFactRow | undefined> {
  const { rows } = await db.query<{ id: string; rule: string; reason: string; created_at: Date }>(
    "SELECT id, rule, reason, created_at FROM approvals WHERE org_id = $1 AND id = $2",
    [orgId, approvalId],
  );
  const row = rows[0];
  return row ? { id: row.id, rule: row.rule, reason: row.reason, createdAt: row.created_at } : undefined;
}

export async function readBridgeFact(db: Queryable, orgId: string, taskId: string, stepId: string): Promise<BridgeFactRow | undefined> {
  const { rows } = await db.query<{ id: string; agent_key: string; status: string; updated_at: Date | null }>(
    "SELECT id, agent_key, status, updated_at FROM a2a_bridge WHERE org_id = $1 AND task_id = $2 AND step_id = $3 ORDER BY attempt DESC, created_at DESC LIMIT 1",
    [orgId, taskId, stepId],
  );
  const row = rows[0];
  return row ? { id: row.id, agentKey: row.agent_key, status: row.status, updatedAt: row.updated_at } : undefined;
}
