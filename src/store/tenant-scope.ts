/**
 * Tenant-scoped transactions: the transaction runs as the non-superuser role `switchyard_app` with
 * `switchyard.org_id` set, so Postgres row-level security hides every other tenant's rows — even from a query
 * that forgot its `WHERE org_id = …`.
 */
import { withTransaction, type Pool, type PoolClient } from "./db.js";

export const APP_ROLE = "switchyard_app";

/** A function that runs `fn` in a transaction; tenant-scoped or not, callers need not care. */
export type TransactionRunner = <T>(orgId: string, fn: (client: PoolClient) => Promise<T>) => Promise<T>;

export async function withTenantTransaction<T>(pool: Pool, orgId: string, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  return withTransaction(pool, async (client) => {
    await client.query(`SET LOCAL ROLE ${APP_ROLE}`);
    await client.query("SELECT set_config('switchyard.org_id', $1, true)", [orgId]);
    return fn(client);
  });
}

export function tenantScoped(pool: Pool): TransactionRunner {
  return (orgId, fn) => withTenantTransaction(pool, orgId, fn);
}

export function unscoped(pool: Pool): TransactionRunner {
  return (_orgId, fn) => withTransaction(pool, fn);
}
