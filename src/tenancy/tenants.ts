/**
 * Tenants: the owners of workflows, tasks and one audit chain each. A row here is what API keys hang off and where
 * the daily budget lives; tenants that only ever used the operator CLI may have data without a row. The rows are
 * read and written through the tenants port (store/tenancy/tenancy-store.ts), which every function here takes first.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { TenantRecord, TenantStore } from "../store/tenancy/tenancy-store.js";

/** Same rule as the `tenants.org_id` CHECK constraint. */
export const ORG_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const MAX_NAME_CHARS = 200;

export type { TenantRecord } from "../store/tenancy/tenancy-store.js";

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

/** ALREADY_EXISTS when the org id is taken. */
export async function createTenant(tenants: Pick<TenantStore, "insert">, db: Queryable, tenant: NewTenant): Promise<TenantRecord> {
  const orgId = validateOrgId(tenant.orgId);
  const name = validateName(tenant.name, "name");
  const dailyBudget = validateDailyBudget(tenant.dailyBudget);
  const created = await tenants.insert(db, { orgId, name, dailyBudget });
  if (!created) throw new SwitchyardError(ErrorCode.AlreadyExists, `tenant ${orgId} already exists`, { details: { path: "org_id", orgId } });
  return created;
}

export async function getTenant(tenants: Pick<TenantStore, "get">, db: Queryable, orgId: string): Promise<TenantRecord | undefined> {
  return tenants.get(db, orgId);
}

/** NOT_FOUND, saying how to create it, when the tenant has no row. */
export async function requireTenantRecord(tenants: Pick<TenantStore, "get">, db: Queryable, orgId: string): Promise<TenantRecord> {
  const tenant = await tenants.get(db, orgId);
  if (!tenant) throw new SwitchyardError(ErrorCode.NotFound, `no tenant ${orgId}; create it with \`switchyard tenant create ${orgId}\``, { details: { orgId } });
  return tenant;
}

export async function listTenants(tenants: Pick<TenantStore, "list">, db: Queryable): Promise<TenantRecord[]> {
  return tenants.list(db);
}

/** Sets the daily budget (null removes it); the governor sees it from the next hop on. NOT_FOUND for no tenant. */
export async function setTenantBudget(tenants: Pick<TenantStore, "setBudget">, db: Queryable, orgId: string, dailyBudget: number | null): Promise<TenantRecord> {
  const budget = validateDailyBudget(dailyBudget);
  const tenant = await tenants.setBudget(db, orgId, budget);
  if (!tenant) throw new SwitchyardError(ErrorCode.NotFound, `no tenant ${orgId}`, { details: { orgId } });
  return tenant;
}
