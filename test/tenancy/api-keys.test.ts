/**
 * Tenants and API keys at rest: keys are random, shown once, stored as hashes, resolved to exactly one tenant (or
 * admin), revocable; a tenant and its first key are created together or not at all.
 */
import { createPostgresStores } from "../../src/store/postgres-stores.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyPrefix, createApiKey, generateApiKeySecret, hashApiKey, listApiKeys, resolveApiKey, revokeApiKey } from "../../src/tenancy/api-keys.js";
import { createTenantWithKey } from "../../src/tenancy/bootstrap.js";
import { createTenant, getTenant, listTenants, setTenantBudget } from "../../src/tenancy/tenants.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

const stores = createPostgresStores();

describe("API keys", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await createTenant(stores.tenants, db.pool, { orgId: "acme", name: "Acme" });
  });
  afterAll(async () => {
    await db.drop();
  });

  it("are sy_ + 32 random bytes (base64url), each different", () => {
    const keys = new Set(Array.from({ length: 200 }, () => generateApiKeySecret()));
    expect(keys.size).toBe(200);
    for (const key of keys) {
      expect(key).toMatch(/^sy_[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(key.slice(3), "base64url")).toHaveLength(32);
    }
  });

  it("are stored as a sha256 hash and a short prefix, never in the clear", async () => {
    const { secret, key } = await createApiKey(stores.apiKeys, db.pool, { kind: "tenant", orgId: "acme", name: "ci" });
    const { rows } = await db.pool.query("SELECT * FROM api_keys WHERE id = $1", [key.id]);
    expect(rows[0].key_hash).toBe(hashApiKey(secret));
    expect(rows[0].key_prefix).toBe(apiKeyPrefix(secret));
    expect(rows[0].key_prefix).toHaveLength(11);
    expect(JSON.stringify(rows[0])).not.toContain(secret.slice(11));
    expect(key).toMatchObject({ kind: "tenant", orgId: "acme", name: "ci", revokedAt: null, lastUsedAt: null });
  });

  it("resolve to their tenant or to admin, record their use, and stop working once revoked", async () => {
    const tenantKey = await createApiKey(stores.apiKeys, db.pool, { kind: "tenant", orgId: "acme", name: "app" });
    const adminKey = await createApiKey(stores.apiKeys, db.pool, { kind: "admin", name: "sre" });
    expect(await resolveApiKey(stores.apiKeys, db.pool, tenantKey.secret)).toEqual({
      status: "ok",
      principal: { kind: "tenant", orgId: "acme", keyId: tenantKey.key.id, keyName: "app", keyPrefix: tenantKey.key.prefix },
    });
    expect(await resolveApiKey(stores.apiKeys, db.pool, adminKey.secret)).toMatchObject({ status: "ok", principal: { kind: "admin", keyName: "sre" } });
    const used = await db.pool.query("SELECT last_used_at FROM api_keys WHERE id = $1", [tenantKey.key.id]);
    expect(used.rows[0].last_used_at).toBeInstanceOf(Date);

    expect(await resolveApiKey(stores.apiKeys, db.pool, generateApiKeySecret())).toEqual({ status: "unknown" });
    expect(await resolveApiKey(stores.apiKeys, db.pool, "sy_short")).toEqual({ status: "unknown" });
    // One character off is another key entirely.
    const flipped = tenantKey.secret.slice(0, -1) + (tenantKey.secret.endsWith("A") ? "B" : "A");
    expect(await resolveApiKey(stores.apiKeys, db.pool, flipped)).toEqual({ status: "unknown" });

    const revoked = await revokeApiKey(stores.apiKeys, db.pool, tenantKey.key.id);
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    expect(await resolveApiKey(stores.apiKeys, db.pool, tenantKey.secret)).toEqual({ status: "revoked", prefix: tenantKey.key.prefix });
    // Revoking again keeps the first time.
    expect((await revokeApiKey(stores.apiKeys, db.pool, tenantKey.key.id)).revokedAt).toEqual(revoked.revokedAt);
    await expect(revokeApiKey(stores.apiKeys, db.pool, "00000000-0000-4000-8000-000000000000")).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(revokeApiKey(stores.apiKeys, db.pool, "nope")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("refuse a tenant that does not exist, an admin key with a tenant, and an empty name", async () => {
    await expect(createApiKey(stores.apiKeys, db.pool, { kind: "tenant", orgId: "ghost", name: "x" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(createApiKey(stores.apiKeys, db.pool, { kind: "admin", orgId: "acme", name: "x" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(createApiKey(stores.apiKeys, db.pool, { kind: "tenant", orgId: "acme", name: "  " })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", details: { path: "name" } });
    await expect(createApiKey(stores.apiKeys, db.pool, { kind: "tenant", orgId: "Bad Org", name: "x" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", details: { path: "org_id" } });
  });

  it("list per tenant or all, never with secrets", async () => {
    const all = await listApiKeys(stores.apiKeys, db.pool);
    expect(all.some((k) => k.kind === "admin")).toBe(true);
    const acme = await listApiKeys(stores.apiKeys, db.pool, { orgId: "acme" });
    expect(acme.every((k) => k.orgId === "acme")).toBe(true);
    expect(JSON.stringify(all)).not.toMatch(/sy_[A-Za-z0-9_-]{43}/);
  });
});

describe("tenants", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("are created with their first key in one transaction, and a taken id is ALREADY_EXISTS with nothing written", async () => {
    const created = await createTenantWithKey(stores, db.pool, { orgId: "globex", name: "Globex", dailyBudget: 40 });
    expect(created.tenant).toMatchObject({ orgId: "globex", name: "Globex", dailyBudget: 40 });
    expect(created.apiKey.key).toMatchObject({ kind: "tenant", orgId: "globex", name: "default" });
    expect(await resolveApiKey(stores.apiKeys, db.pool, created.apiKey.secret)).toMatchObject({ status: "ok", principal: { orgId: "globex" } });
    const keysBefore = (await listApiKeys(stores.apiKeys, db.pool)).length;
    await expect(createTenantWithKey(stores, db.pool, { orgId: "globex", name: "again" })).rejects.toMatchObject({ code: "ALREADY_EXISTS" });
    expect((await listApiKeys(stores.apiKeys, db.pool)).length).toBe(keysBefore);
  });

  it("validate the id, the name and the budget", async () => {
    await expect(createTenant(stores.tenants, db.pool, { orgId: "Has Space", name: "x" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", details: { path: "org_id" } });
    await expect(createTenant(stores.tenants, db.pool, { orgId: "_system", name: "x" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(createTenant(stores.tenants, db.pool, { orgId: "ok", name: "" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", details: { path: "name" } });
    await expect(createTenant(stores.tenants, db.pool, { orgId: "ok", name: "x", dailyBudget: 0 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", details: { path: "daily_budget" } });
    expect(await getTenant(stores.tenants, db.pool, "ok")).toBeUndefined();
  });

  it("have a daily budget that can be set and removed, and is what the governor reads", async () => {
    await createTenant(stores.tenants, db.pool, { orgId: "initech", name: "Initech" });
    expect((await setTenantBudget(stores.tenants, db.pool, "initech", 12.5)).dailyBudget).toBe(12.5);
    const { rows } = await db.pool.query("SELECT daily_budget FROM tenants WHERE org_id = 'initech'");
    expect(rows[0].daily_budget).toBe(12.5);
    expect((await setTenantBudget(stores.tenants, db.pool, "initech", null)).dailyBudget).toBeNull();
    await expect(setTenantBudget(stores.tenants, db.pool, "nobody", 1)).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect((await listTenants(stores.tenants, db.pool)).map((t) => t.orgId)).toEqual(["globex", "initech"]);
  });
});
