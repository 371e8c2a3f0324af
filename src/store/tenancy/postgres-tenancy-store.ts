/**
 * The Postgres adapters of the tenancy ports (tenancy-store.ts): tables `tenants` and `api_keys`, one SQL operation
 * per function. What a row may hold is checked by the features before it gets here (tenancy/).
 */
import type { Queryable } from "../db.js";
import type { ApiKeyKind, ApiKeyRecord, ApiKeyStore, NewApiKeyRow, TenantRecord, TenantStore } from "./tenancy-store.js";

export function createPostgresTenantStore(): TenantStore {
  return { insert: insertTenant, get: getTenantRow, exists: tenantExists, list: listTenantRows, setBudget: setTenantBudgetRow };
}

export function createPostgresApiKeyStore(): ApiKeyStore {
  return { insert: insertApiKey, revoke: revokeApiKeyRow, list: listApiKeyRows, findByHashes: touchApiKeysByHash };
}

const TENANT_COLUMNS = "org_id, name, daily_budget, created_at";

interface TenantRow {
  org_id: string;
  name: string;
  daily_budget: number | null;
  created_at: Date;
}

function toTenant(row: TenantRow): TenantRecord {
  return { orgId: row.org_id, name: row.name, dailyBudget: row.daily_budget, createdAt: row.created_at };
}

export async function insertTenant(db: Queryable, tenant: { orgId: string; name: string; dailyBudget: number | null }): Promise<TenantRecord | undefined> {
  const { rows } = await db.query<TenantRow>(
    `INSERT INTO tenants (org_id, name, daily_budget) VALUES ($1, $2, $3) ON CONFLICT (org_id) DO NOTHING RETURNING ${TENANT_COLUMNS}`,
    [tenant.orgId, tenant.name, tenant.dailyBudget],
  );
  return rows[0] ? toTenant(rows[0]) : undefined;
}

export async function getTenantRow(db: Queryable, orgId: string): Promise<TenantRecord | undefined> {
  const { rows } = await db.query<TenantRow>(`SELECT ${TENANT_COLUMNS} FROM tenants WHERE org_id = $1`, [orgId]);
  return rows[0] ? toTenant(rows[0]) : undefined;
}

export async function tenantExists(db: Queryable, orgId: string): Promise<boolean> {
  const { rowCount } = await db.query("SELECT 1 FROM tenants WHERE org_id = $1", [orgId]);
  return Boolean(rowCount);
}

export async function listTenantRows(db: Queryable): Promise<TenantRecord[]> {
  const { rows } = await db.query<TenantRow>(`SELECT ${TENANT_COLUMNS} FROM tenants ORDER BY org_id`);
  return rows.map(toTenant);
}

export async function setTenantBudgetRow(db: Queryable, orgId: string, dailyBudget: number | null): Promise<TenantRecord | undefined> {
  const { rows } = await db.query<TenantRow>(`UPDATE tenants SET daily_budget = $2 WHERE org_id = $1 RETURNING ${TENANT_COLUMNS}`, [orgId, dailyBudget]);
  return rows[0] ? toTenant(rows[0]) : undefined;
}

const KEY_COLUMNS = "id, kind, org_id, name, key_prefix, created_at, revoked_at, last_used_at";

interface ApiKeyRow {
  id: string;
  kind: ApiKeyKind;
  org_id: string | null;
  name: string;
  key_prefix: string;
  created_at: Date;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    kind: row.kind,
    orgId: row.org_id,
    name: row.name,
    prefix: row.key_prefix,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
  };
}

export async function insertApiKey(db: Queryable, key: NewApiKeyRow): Promise<ApiKeyRecord> {
  const { rows } = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (id, org_id, kind, name, key_hash, key_prefix) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${KEY_COLUMNS}`,
    [key.id, key.orgId, key.kind, key.name, key.keyHash, key.keyPrefix],
  );
  return toApiKey(rows[0]!);
}

export async function revokeApiKeyRow(db: Queryable, id: string): Promise<ApiKeyRecord | undefined> {
  const { rows } = await db.query<ApiKeyRow>(`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING ${KEY_COLUMNS}`, [id]);
  return rows[0] ? toApiKey(rows[0]) : undefined;
}

export async function listApiKeyRows(db: Queryable, orgId: string | null): Promise<ApiKeyRecord[]> {
  const { rows } = await db.query<ApiKeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE ($1::text IS NULL OR org_id = $1) ORDER BY created_at, id`, [orgId]);
  return rows.map(toApiKey);
}

export async function touchApiKeysByHash(db: Queryable, hashes: readonly string[], touchEverySeconds: number): Promise<Array<ApiKeyRecord & { keyHash: string }>> {
  const { rows } = await db.query<ApiKeyRow & { key_hash: string }>(
    `WITH touched AS (
       UPDATE api_keys SET last_used_at = now()
       WHERE key_hash = ANY($1::text[]) AND revoked_at IS NULL
         AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2))
     )
     SELECT key_hash, ${KEY_COLUMNS} FROM api_keys WHERE key_hash = ANY($1::text[])`,
    [hashes, touchEverySeconds],
  );
  return rows.map((row) => ({ ...toApiKey(row), keyHash: row.key_hash }));
}
