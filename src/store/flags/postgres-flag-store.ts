/**
 * The Postgres adapter of the FlagStore port (flag-store.ts): table `flags`, each change with its audit row in one
 * transaction, the changes read back from `audit_log`, and the tenants in flight a tenant hold looks at. One SQL
 * operation per function; what a change writes is flags/flag-changes.ts's.
 */
import pg from "pg";
import { appendAudit } from "../audit/postgres-audit-store.js";
import { shardSqlClause, shardSqlParams } from "../../bus/shards.js";
import { withTransaction, type Pool, type PoolClient, type Queryable } from "../db.js";
import { isFlagName, type FlagName, type FlagRow, type ScopeKind } from "../../flags/flag-types.js";
import type { FlagAuditRecord, FlagHistoryQuery, FlagStore, FlagWrite } from "./flag-store.js";

export function createPostgresFlagStore(): FlagStore {
  return {
    set: (db, flag, audit) =>
      run(db, async (client) => {
        const row = await upsertFlag(client, flag);
        const [written] = await appendAudit(client, [audit]);
        return { ...row, audit: written! };
      }),
    list: listFlags,
    history: listFlagAudit,
    tenantsInFlight: listTenantsInFlight,
  };
}

function run<T>(db: Pool | PoolClient, write: (client: PoolClient) => Promise<T>): Promise<T> {
  return db instanceof pg.Pool ? withTransaction(db, write) : write(db as PoolClient);
}

export async function upsertFlag(client: Queryable, flag: FlagWrite): Promise<FlagRow> {
  const { rows } = await client.query<FlagDbRow>(
    `INSERT INTO flags (name, scope_kind, scope, enabled, updated_by, reason, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7::double precision / 1000))
     ON CONFLICT (name, scope_kind, scope) DO UPDATE
       SET enabled = EXCLUDED.enabled, updated_by = EXCLUDED.updated_by, reason = EXCLUDED.reason, updated_at = EXCLUDED.updated_at
     RETURNING ${FLAG_COLUMNS}`,
    [flag.name, flag.scopeKind, flag.scope, flag.enabled, flag.updatedBy, flag.reason, flag.nowMs],
  );
  return flagRowFromDb(rows[0]!);
}

/** Every stored flag value, by name then scope. */
export async function listFlags(db: Queryable): Promise<FlagRow[]> {
  const { rows } = await db.query<FlagDbRow>(`SELECT ${FLAG_COLUMNS} FROM flags ORDER BY name, scope_kind, scope`);
  // Rows a newer release wrote (a flag this code does not know) are not ours to interpret.
  return rows.filter((row) => isFlagName(row.name)).map(flagRowFromDb);
}

export async function listFlagAudit(db: Queryable, query: FlagHistoryQuery): Promise<FlagAuditRecord[]> {
  const { rows } = await db.query<{ org_id: string; seq: string; rule: string; destination: string; verdict: string; actor: string; reason: string; at_ms: string }>(
    `SELECT org_id, seq, rule, destination, verdict, actor, reason, at_ms FROM audit_log
     WHERE action = 'flag' AND ($1::text IS NULL OR rule = $1) AND ($2::text IS NULL OR destination = $2)
       AND ($3::bigint IS NULL OR at_ms < $3)
     ORDER BY at_ms DESC, org_id, seq DESC LIMIT $4`,
    [query.name, query.destination, query.beforeMs, query.limit],
  );
  return rows.map((row) => ({
    chain: row.org_id,
    seq: Number(row.seq),
    rule: row.rule,
    destination: row.destination,
    verdict: row.verdict,
    actor: row.actor,
    reason: row.reason,
    atMs: Number(row.at_ms),
  }));
}

export async function listTenantsInFlight(db: Queryable, shards?: { count: number; owned: readonly number[] }): Promise<string[]> {
  const { rows } = await db.query<{ org_id: string }>(
    `SELECT DISTINCT org_id FROM tasks WHERE status IN ('running', 'parked') AND ${shardSqlClause("org_id", 1)}`,
    shardSqlParams(shards),
  );
  return rows.map((row) => row.org_id);
}

const FLAG_COLUMNS = "name, scope_kind, scope, enabled, updated_by, reason, updated_at";

interface FlagDbRow {
  name: string;
  scope_kind: string;
  scope: string;
  enabled: boolean;
  updated_by: string;
  reason: string;
  updated_at: Date;
}

function flagRowFromDb(row: FlagDbRow): FlagRow {
  return {
    name: row.name as FlagName,
    scopeKind: row.scope_kind as ScopeKind,
    scope: row.scope,
    enabled: row.enabled,
    updatedBy: row.updated_by,
    reason: row.reason,
    updatedAt: row.updated_at.toISOString(),
  };
}
