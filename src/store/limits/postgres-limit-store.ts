/**
 * The Postgres adapter of the LimitStore port (limit-store.ts): table `dispatch_limits`, each change with its audit
 * row in one transaction. One SQL operation per function; what a change writes is fairness/limit-changes.ts's.
 */
import pg from "pg";
import { appendAudit } from "../audit/postgres-audit-store.js";
import { withTransaction, type Pool, type PoolClient, type Queryable } from "../db.js";
import type { DispatchLimitRow } from "../../core/limits.js";
import type { LimitStore, LimitWrite } from "./limit-store.js";

export function createPostgresLimitStore(): LimitStore {
  return {
    set: (db, limit, audit) =>
      run(db, async (client) => {
        const row = await upsertLimit(client, limit);
        const [written] = await appendAudit(client, [audit]);
        return { ...row, audit: written! };
      }),
    clear: (db, scope, audit) =>
      run(db, async (client) => {
        if (!(await deleteLimit(client, scope))) return false;
        await appendAudit(client, [audit]);
        return true;
      }),
    list: listLimits,
  };
}

function run<T>(db: Pool | PoolClient, write: (client: PoolClient) => Promise<T>): Promise<T> {
  return db instanceof pg.Pool ? withTransaction(db, write) : write(db as PoolClient);
}

export async function upsertLimit(client: Queryable, limit: LimitWrite): Promise<DispatchLimitRow> {
  const { rows } = await client.query<LimitDbRow>(
    `INSERT INTO dispatch_limits (org_id, destination, max_in_flight, rate_per_sec, burst, weight, updated_by, reason, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, to_timestamp($9::double precision / 1000))
     ON CONFLICT (org_id, destination) DO UPDATE SET max_in_flight = EXCLUDED.max_in_flight, rate_per_sec = EXCLUDED.rate_per_sec,
       burst = EXCLUDED.burst, weight = EXCLUDED.weight, updated_by = EXCLUDED.updated_by, reason = EXCLUDED.reason, updated_at = EXCLUDED.updated_at
     RETURNING ${COLUMNS}`,
    [limit.orgId, limit.destination, limit.maxInFlight, limit.ratePerSec, limit.burst, limit.weight, limit.updatedBy, limit.reason, limit.nowMs],
  );
  return fromDb(rows[0]!);
}

/** False when the scope had no limits. */
export async function deleteLimit(client: Queryable, scope: { orgId: string; destination: string }): Promise<boolean> {
  const { rowCount } = await client.query("DELETE FROM dispatch_limits WHERE org_id = $1 AND destination = $2", [scope.orgId, scope.destination]);
  return rowCount !== 0;
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
