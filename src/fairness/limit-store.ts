/**
 * Stored dispatch limits (table `dispatch_limits`) and their audit trail, like flags (src/flags/flag-store.ts): a
 * change is written with its audit row in ONE transaction. Audit rows: action `limit`, actor, destination = the
 * scope (`tenant:T`, `tenant:T/role:R`, `role:R`), verdict `set` / `cleared`, rule = what was set
 * (`maxInFlight=3 ratePerSec=50 …`), reason. A tenant's limits go to its own chain, a destination's capacity to the
 * `_system` chain.
 */
import pg from "pg";
import type { AuditRow } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { appendAudit } from "../governance/audit-log.js";
import { SYSTEM_CHAIN } from "../flags/flag-store.js";
import { withTransaction, type Pool, type PoolClient, type Queryable } from "../store/db.js";
import { validateLimit, type DispatchLimit, type DispatchLimitRow } from "../core/limits.js";

export interface LimitChange {
  actor: string;
  reason: string;
}

function text(value: unknown, path: string): string {
  if (typeof value !== "string" || value.trim() === "") throw new SwitchyardError(ErrorCode.InvalidArgument, `${path} must be a non-empty string`, { details: { path } });
  if (value.length > 1_000) throw new SwitchyardError(ErrorCode.InvalidArgument, `${path} must be at most 1000 characters`, { details: { path } });
  return value.trim();
}

/** `tenant:acme/role:writer`, `tenant:acme`, `role:writer`. */
export function describeLimitScope(orgId: string, destination: string): string {
  if (orgId === "") return destination;
  return destination === "" ? `tenant:${orgId}` : `tenant:${orgId}/${destination}`;
}

function describeValues(limit: DispatchLimit): string {
  const parts: string[] = [];
  if (limit.maxInFlight !== null) parts.push(`maxInFlight=${limit.maxInFlight}`);
  if (limit.ratePerSec !== null) parts.push(`ratePerSec=${limit.ratePerSec}`);
  if (limit.burst !== null) parts.push(`burst=${limit.burst}`);
  if (limit.weight !== null) parts.push(`weight=${limit.weight}`);
  return parts.join(" ");
}

async function audit(client: PoolClient, orgId: string, destination: string, verdict: string, rule: string, change: LimitChange, nowMs: number): Promise<AuditRow> {
  const [row] = await appendAudit(client, [
    {
      orgId: orgId === "" ? SYSTEM_CHAIN : orgId,
      action: "limit",
      actor: change.actor,
      destination: describeLimitScope(orgId, destination),
      verdict,
      rule,
      reason: change.reason,
      payloadHash: "",
      cost: 0,
      taskId: "",
      stepId: "",
      envelopeId: "",
      atMs: nowMs,
    },
  ]);
  return row!;
}

function run<T>(db: Pool | PoolClient, write: (client: PoolClient) => Promise<T>): Promise<T> {
  return db instanceof pg.Pool ? withTransaction(db, write) : write(db as PoolClient);
}

/** Sets (replaces) the limits of one scope and audits the change. Fields left null are not limited. */
export async function setLimit(db: Pool | PoolClient, limit: DispatchLimit, change: LimitChange, options: { nowMs?: number } = {}): Promise<DispatchLimitRow & { audit: AuditRow }> {
  const checked = validateLimit(limit);
  const actor = text(change.actor, "actor");
  const reason = text(change.reason, "reason");
  const nowMs = options.nowMs ?? Date.now();
  return run(db, async (client) => {
    const { rows } = await client.query<LimitDbRow>(
      `INSERT INTO dispatch_limits (org_id, destination, max_in_flight, rate_per_sec, burst, weight, updated_by, reason, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, to_timestamp($9::double precision / 1000))
       ON CONFLICT (org_id, destination) DO UPDATE SET max_in_flight = EXCLUDED.max_in_flight, rate_per_sec = EXCLUDED.rate_per_sec,
         burst = EXCLUDED.burst, weight = EXCLUDED.weight, updated_by = EXCLUDED.updated_by, reason = EXCLUDED.reason, updated_at = EXCLUDED.updated_at
       RETURNING ${COLUMNS}`,
      [checked.orgId, checked.destination, checked.maxInFlight, checked.ratePerSec, checked.burst, checked.weight, actor, reason, nowMs],
    );
    const row = await audit(client, checked.orgId, checked.destination, "set", describeValues(checked), { actor, reason }, nowMs);
    return { ...fromDb(rows[0]!), audit: row };
  });
}

/** Removes the limits of one scope (audited); false when it had none. */
export async function clearLimit(db: Pool | PoolClient, scope: { orgId: string; destination: string }, change: LimitChange, options: { nowMs?: number } = {}): Promise<boolean> {
  if (scope.orgId === "" && scope.destination === "") throw new SwitchyardError(ErrorCode.InvalidArgument, "a limit names a tenant, a destination, or both", { details: { path: "tenant" } });
  const actor = text(change.actor, "actor");
  const reason = text(change.reason, "reason");
  const nowMs = options.nowMs ?? Date.now();
  return run(db, async (client) => {
    const { rowCount } = await client.query("DELETE FROM dispatch_limits WHERE org_id = $1 AND destination = $2", [scope.orgId, scope.destination]);
    if (rowCount === 0) return false;
    await audit(client, scope.orgId, scope.destination, "cleared", "", { actor, reason }, nowMs);
    return true;
  });
}

export async function listLimits(db: Queryable): Promise<DispatchLimitRow[]> {
  const { rows } = await db.query<LimitDbRow>(`SELECT ${COLUMNS} FROM dispatch_limits ORDER BY org_id, destination`);
  return rows.map(fromDb);
}

const COLUMNS = "org_id, destination, max_in_flight, rate_per_sec, burst, weight, updated_by, reason, updated_at";

interface LimitDbRow {
  org_id: string;
  destination: string;
  max_in_flight: number | null;
  rate_per_sec: number | null;
  burst: number | null;
  weight: number | null;
  updated_by: string;
  reason: string;
  updated_at: Date;
}

function fromDb(row: LimitDbRow): DispatchLimitRow {
  return {
    orgId: row.org_id,
    destination: row.destination,
    maxInFlight: row.max_in_flight,
    ratePerSec: row.rate_per_sec,
    burst: row.burst,
    weight: row.weight,
    updatedBy: row.updated_by,
    reason: row.reason,
    updatedAt: row.updated_at.toISOString(),
  };
}
