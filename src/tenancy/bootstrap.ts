/**
 * Creating a tenant together with its first API key, in one transaction: either both exist afterwards or neither.
 */
import { withTransaction, type Pool } from "../store/db.js";
import type { ApiKeyStore, TenantStore } from "../store/tenancy/tenancy-store.js";
import { createApiKey, type NewApiKey } from "./api-keys.js";
import { createTenant, type NewTenant, type TenantRecord } from "./tenants.js";

export interface CreatedTenant {
  tenant: TenantRecord;
  /** The first key; its secret is shown once. */
  apiKey: NewApiKey;
}

/** The tenancy ports (`runtime.stores`'s `tenants` and `apiKeys`). */
export interface TenancyStores {
  tenants: Pick<TenantStore, "insert">;
  apiKeys: Pick<ApiKeyStore, "insert">;
}

export async function createTenantWithKey(stores: TenancyStores, pool: Pool, request: NewTenant & { keyName?: string }): Promise<CreatedTenant> {
  return withTransaction(pool, async (client) => {
    const tenant = await createTenant(stores.tenants, client, request);
    const apiKey = await createApiKey(stores.apiKeys, client, { kind: "tenant", orgId: tenant.orgId, name: request.keyName?.trim() || "default" });
    return { tenant, apiKey };
  });
}
