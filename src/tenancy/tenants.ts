/**
 * Tenants: the owners of workflows, tasks and one audit chain each. A row here is what API keys hang off and where
 * the daily budget lives; tenants that only ever used the operator CLI may have data without a row.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";

/** Same rule as the `tenants.org_id` CHECK constraint. */
export const ORG_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const MAX_NAME_CHARS = 200;

export interface TenantRecord {
  orgId: string;
  name: string;
  /** Cost units per UTC day; null when unbounded. */
  dailyBudget: number | null;
  createdAt: Date;
}

export interface NewTenant {
  orgId: string;
  name: string;
  dailyBudget?: number | null;
}

export function validateOrgId(orgId: string, path = "org_id"): string {
  if (typeof orgId !== "string" || !ORG_ID_PATTERN.test(orgId)) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `${path}: must match ${ORG_ID_PATTERN.source}, got ${JSON.stringify(orgId)}`, {
      details: { path, reason: `must match ${ORG_ID_PATTERN.source}` },
    });
  }
  return orgId;
}

export function validateDailyBudget(budget: number | null | undefined, path = "daily_budget"): number | null {
  if (budget === null || budget === undefined) return null;
  if (!Number.isFinite(budget) || budget <= 0) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `${path}: must be a positive number of cost units, got ${budget}`, {
      details: { path, reason: "must be a positive number" },
    });
  }
  return budget;
}

function validateName(name: string, path: string): string {
  const trimmed = typeof name === "string" ? name.trim() : "";
  if (trimmed === "" || trimmed.length > MAX_NAME_CHARS) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `${path}: must be 1 to ${MAX_NAME_CHARS} characters`, { details: { path, reason: "is required" } });
  }
  return trimmed;
}

const COLUMNS = "org_id, name, daily_budget, created_at";

function toTenant(row: { org_id: string; name: string; daily_budget: number | null; created_at: Date }): TenantRecord {
  return { orgId: row.org_id, name: row.name, dailyBudget: row.daily_budget, createdAt: row.created_at };
}

/** ALREADY_EXISTS when the org id is taken. */
export async function createTenant(db: Queryable, tenant: NewTenant): Promise<TenantRecord> {
  const orgId = validateOrgId(tenant.orgId);
  const name = validateName(tenant.name, "name");
  const dailyBudget = validateDailyBudget(tenant.dailyBudget);
  const { rows } = await db.query(
    `INSERT INTO tenants (org_id, name, daily_budget) VALUES ($1, $2, $3) ON CONFLICT (org_id) DO NOTHING RETURNING ${COLUMNS}`,
    [orgId, name, dailyBudget],
  );
  if (!rows[0]) throw new SwitchyardError(ErrorCode.AlreadyExists, `tenant ${orgId} already exists`, { details: { path: "org_id", orgId } });
  return toTenant(rows[0]);
}

export async function getTenant(db: Queryable, orgId: string): Promise<TenantRecord | undefined> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM tenants WHERE org_id = $1`, [orgId]);
  return rows[0] ? toTenant(rows[0]) : undefined;
}

export async function requireTenantRecord(db: Queryable, orgId: string): Promise<TenantRecord> {
  const tenant = await getTenant(db, orgId);
  if (!tenant) throw new SwitchyardError(ErrorCode.NotFound, `no tenant ${orgId}; create it with \`switchyard tenant create ${orgId}\``, { details: { orgId } });
  return tenant;
}

export async function listTenants(db: Queryable): Promise<TenantRecord[]> {
  const { rows } = await db.query(`SELECT ${COLUMNS} FROM tenants ORDER BY org_id`);
  return rows.map(toTenant);
}

/** Sets the daily budget (null removes it); the governor sees it from the next hop on. NOT_FOUND for no tenant. */
export async function setTenantBudget(db: Queryable, orgId: string, dailyBudget: number | null): Promise<TenantRecord> {
  const budget = validateDailyBudget(dailyBudget);
  const { rows } = await db.query(`UPDATE tenants SET daily_budget = $2 WHERE org_id = $1 RETURNING ${COLUMNS}`, [orgId, budget]);
  if (!rows[0]) throw new SwitchyardError(ErrorCode.NotFound, `no tenant ${orgId}`, { details: { orgId } });
  return toTenant(rows[0]);
}
