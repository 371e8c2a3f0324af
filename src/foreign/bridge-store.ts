/**
 * Rows of `a2a_bridge` (migrations/0003): the correlation between a governed foreign hop (tenant, task, step,
 * attempt) and the A2A task it opened at the agent. Callers run these as the owner (coordinator, callback route):
 * the bridge id alone names the tenant.
 */
import type { Queryable } from "../store/db.js";
import type { ForeignArtifact } from "./a2a/artifacts.js";

export type BridgeStatus =
  | "pending_send"
  | "dispatched"
  | "working"
  | "completed"
  | "failed"
  | "canceled"
  | "rejected"
  | "timed_out"
  | "send_failed";

/** Statuses in which the bridge still waits for the agent; anything else is resolved and never changes again. */
export const OPEN_BRIDGE_STATUSES: readonly BridgeStatus[] = ["pending_send", "dispatched", "working"];

export interface BridgeRecord {
  id: string;
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  agentKey: string;
  dialect: "auto" | "1.0" | "0.3";
  foreignTaskId: string | null;
  status: BridgeStatus;
  notificationTokenHash: string;
  tokenKid: string;
  request: unknown;
  clearance: number;
  artifacts: ForeignArtifact[];
  lastState: string | null;
  deadlineMs: number | null;
  createdAt: Date;
  updatedAt: Date;
  resolvedAt: Date | null;
}

export const BRIDGE_COLUMNS = `id, org_id, task_id, step_id, attempt, agent_key, dialect, foreign_task_id, status, notification_token_hash,
  token_kid, request, clearance, artifacts, last_state, deadline_ms, created_at, updated_at, resolved_at`;

export function toBridge(row: Record<string, unknown>): BridgeRecord {
  return {
    id: row.id as string,
    orgId: row.org_id as string,
    taskId: row.task_id as string,
    stepId: row.step_id as string,
    attempt: row.attempt as number,
    agentKey: row.agent_key as string,
    dialect: row.dialect as BridgeRecord["dialect"],
    foreignTaskId: (row.foreign_task_id as string | null) ?? null,
    status: row.status as BridgeStatus,
    notificationTokenHash: row.notification_token_hash as string,
    tokenKid: row.token_kid as string,
    request: row.request,
    clearance: row.clearance as number,
    artifacts: (row.artifacts as ForeignArtifact[] | null) ?? [],
    lastState: (row.last_state as string | null) ?? null,
    deadlineMs: row.deadline_ms === null || row.deadline_ms === undefined ? null : Number(row.deadline_ms),
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
    resolvedAt: (row.resolved_at as Date | null) ?? null,
  };
}

export interface NewBridge {
  id: string;
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  agentKey: string;
  dialect: BridgeRecord["dialect"];
  notificationTokenHash: string;
  tokenKid: string;
  request: unknown;
  clearance: number;
}

/** Idempotent by id (the hop's envelope id): a replayed hop finds its bridge. */
export async function insertBridge(db: Queryable, bridge: NewBridge): Promise<void> {
  await db.query(
    `INSERT INTO a2a_bridge (id, org_id, task_id, step_id, attempt, agent_key, dialect, status, notification_token_hash, token_kid, request, clearance)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending_send', $8, $9, $10, $11) ON CONFLICT (id) DO NOTHING`,
    [bridge.id, bridge.orgId, bridge.taskId, bridge.stepId, bridge.attempt, bridge.agentKey, bridge.dialect, bridge.notificationTokenHash, bridge.tokenKid, JSON.stringify(bridge.request ?? null), bridge.clearance],
  );
}

const BRIDGE_ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether `id` can name a bridge at all (a lowercase UUID); anything else is refused before it reaches SQL. */
export function isBridgeId(id: string): boolean {
  return BRIDGE_ID_RE.test(id);
}

export async function findBridge(db: Queryable, id: string, forUpdate = false): Promise<BridgeRecord | undefined> {
  if (!isBridgeId(id)) return undefined;
  const { rows } = await db.query(`SELECT ${BRIDGE_COLUMNS} FROM a2a_bridge WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`, [id]);
  return rows[0] ? toBridge(rows[0]) : undefined;
}

/** The bridges of a task, oldest first (for tests, the CLI and operators). */
export async function listBridges(db: Queryable, orgId: string, taskId: string): Promise<BridgeRecord[]> {
  const { rows } = await db.query(`SELECT ${BRIDGE_COLUMNS} FROM a2a_bridge WHERE org_id = $1 AND task_id = $2 ORDER BY created_at, id`, [orgId, taskId]);
  return rows.map(toBridge);
}

export function isOpen(status: BridgeStatus): boolean {
  return OPEN_BRIDGE_STATUSES.includes(status);
}
