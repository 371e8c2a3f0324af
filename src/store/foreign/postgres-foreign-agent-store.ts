/**
 * The Postgres adapter of the foreign agent registry's port (foreign-agent-store.ts): table `foreign_agents`, one
 * SQL operation per function, each filtered by the tenant it is given.
 */
import type { Queryable } from "../db.js";
import type { ForeignAgentRecord, ForeignAgentStore, ForeignAgentValues, ForeignDelivery, ForeignProtocol } from "./foreign-agent-store.js";

export function createPostgresForeignAgentStore(): ForeignAgentStore {
  return { insert: insertForeignAgent, find: findForeignAgentRow, lock: lockForeignAgentRow, list: listForeignAgentRows, update: updateForeignAgentRow, disable: disableForeignAgentRow };
}

const COLUMNS = `org_id, agent_key, base_url, protocol, credential_ref, allow_host, skills, clearance_ceiling, cost_estimate, enabled,
  idempotent, tool, delivery, send_fields, cost_per_second, created_at, updated_at`;

function toRecord(row: Record<string, unknown>): ForeignAgentRecord {
  return {
    orgId: row.org_id as string,
    agentKey: row.agent_key as string,
    baseUrl: row.base_url as string,
    protocol: row.protocol as ForeignProtocol,
    credentialRef: (row.credential_ref as string | null) ?? null,
    allowHost: row.allow_host as string,
    skills: row.skills as string[],
    clearanceCeiling: row.clearance_ceiling as number,
    costEstimate: row.cost_estimate as number,
    enabled: row.enabled as boolean,
    idempotent: row.idempotent as boolean,
    tool: (row.tool as string | null) ?? null,
    delivery: row.delivery as ForeignDelivery,
    sendFields: (row.send_fields as string[] | null) ?? null,
    costPerSecond: Number(row.cost_per_second),
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
  };
}

/** `$3` … `$15`, in the order both statements write them. */
function valueParams(v: ForeignAgentValues): unknown[] {
  return [v.baseUrl, v.protocol, v.credentialRef, v.allowHost, v.skills, v.clearanceCeiling, v.costEstimate, v.enabled, v.idempotent, v.tool, v.delivery, v.sendFields, v.costPerSecond];
}

export async function insertForeignAgent(db: Queryable, orgId: string, agentKey: string, values: ForeignAgentValues): Promise<ForeignAgentRecord | undefined> {
  const { rows } = await db.query(
    `INSERT INTO foreign_agents (org_id, agent_key, base_url, protocol, credential_ref, allow_host, skills, clearance_ceiling, cost_estimate, enabled, idempotent,
       tool, delivery, send_fields, cost_per_second)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
     ON CONFLICT (org_id, agent_key) DO NOTHING
     RETURNING ${COLUMNS}`,
    [orgId, agentKey, ...valueParams(values)],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

export async function findForeignAgentRow(db: Queryable, orgId: string, agentKey: string): Promise<ForeignAgentRecord | undefined> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM foreign_agents WHERE org_id = $1 AND agent_key = $2`, [orgId, agentKey]);
  return rows[0] ? toRecord(rows[0]) : undefined;
}

export async function lockForeignAgentRow(db: Queryable, orgId: string, agentKey: string): Promise<ForeignAgentRecord | undefined> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM foreign_agents WHERE org_id = $1 AND agent_key = $2 FOR UPDATE`, [orgId, agentKey]);
  return rows[0] ? toRecord(rows[0]) : undefined;
}

export async function listForeignAgentRows(db: Queryable, orgId: string): Promise<ForeignAgentRecord[]> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM foreign_agents WHERE org_id = $1 ORDER BY agent_key`, [orgId]);
  return rows.map(toRecord);
}

export async function updateForeignAgentRow(db: Queryable, orgId: string, agentKey: string, values: ForeignAgentValues): Promise<ForeignAgentRecord> {
  const { rows } = await db.query(
    `UPDATE foreign_agents SET base_url = $3, protocol = $4, credential_ref = $5, allow_host = $6, skills = $7, clearance_ceiling = $8,
       cost_estimate = $9, enabled = $10, idempotent = $11, tool = $12, delivery = $13, send_fields = $14, cost_per_second = $15, updated_at = now()
     WHERE org_id = $1 AND agent_key = $2
     RETURNING ${COLUMNS}`,
    [orgId, agentKey, ...valueParams(values)],
  );
  return toRecord(rows[0]);
}

export async function disableForeignAgentRow(db: Queryable, orgId: string, agentKey: string): Promise<ForeignAgentRecord | undefined> {
  const { rows } = await db.query(
    `UPDATE foreign_agents SET enabled = false, updated_at = CASE WHEN enabled THEN now() ELSE updated_at END
     WHERE org_id = $1 AND agent_key = $2 RETURNING ${COLUMNS}`,
    [orgId, agentKey],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}
