/**
 * Creating a tenant together with its first API key, in one transaction: either both exist afterwards or neither.
 */
import { withTransaction, type Pool } from "../store/db.js";
import { createApiKey, type NewApiKey } from "./api-keys.js";
import { createTenant, type NewTenant, type TenantRecord } from "./tenants.js";

export interface CreatedTenant {
  tenant: TenantRecord;
  /** The first key; its secret is shown once. */
  apiKey: NewApiKey;
}

export async function createTenantWithKey(pool: Pool, request: NewTenant & { keyName?: string }): Promise<CreatedTenant> {
  return withTransaction(pool, async (client) => {
    const tenant = await createTenant(client, request);
    const apiKey = await createApiKey(client, { kind: "tenant", orgId: tenant.orgId, name: request.keyName?.trim() || "default" });
    return { tenant, apiKey };
  });
}
