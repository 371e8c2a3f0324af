/**
 * The connection vault's store: normalised account keys and default API base URLs per kind, targets validation,
 * one connection per (tenant, kind, account), refusal without a key (confirmation 5), rotate and delete, an audit
 * row per change with the fingerprint and never the secret, and row-level security between tenants.
 */
import { createPostgresStores } from "../../src/store/postgres-stores.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { withTransaction } from "../../src/store/db.js";
import { withTenantTransaction } from "../../src/store/tenant-scope.js";
import { createTenant } from "../../src/tenancy/tenants.js";
import { normaliseConnectionInput, type ConnectionInput } from "../../src/vault/connection-input.js";
import { openConnectionSecret } from "../../src/vault/connection-secret.js";
import { addConnection, deleteConnection, getConnection, listConnections, recordConnectionBot, rotateConnection } from "../../src/vault/connection-store.js";
import { ENCRYPTION_KEY_VARIABLE } from "../../src/vault/secret-cipher.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { createPostgresAuditStore } from "../../src/store/audit/postgres-audit-store.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { cipherOf, keyItem, uniqueSecret } from "./helpers.js";

const stores = createPostgresStores();

function problemPaths(input: Partial<ConnectionInput>): string[] {
  try {
    normaliseConnectionInput({ kind: "github", accountKey: "github.com", secret: "tok", ...input });
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    return ((error as SwitchyardError).details.errors as Array<{ path: string }>).map((p) => p.path);
  }
}

describe("connection input", () => {
  it("normalises account keys to the form addresses carry, with each kind's default API base URL", () => {
    const n = (kind: string, accountKey: string, apiBaseUrl?: string) =>
      normaliseConnectionInput({ kind, accountKey, secret: "tok", ...(apiBaseUrl !== undefined ? { apiBaseUrl } : {}) });
    expect(n("github", "GitHub.com")).toEqual({ kind: "github", accountKey: "github.com", apiBaseUrl: "https://api.github.com", targets: [] });
    expect(n("github", "ghe.acme.example")).toMatchObject({ accountKey: "ghe.acme.example", apiBaseUrl: "https://ghe.acme.example/api/v3" });
    expect(n("github", "https://GHE.acme.example/")).toMatchObject({ accountKey: "ghe.acme.example" });
    expect(n("gitea", "git.example:3000")).toMatchObject({ accountKey: "git.example:3000", apiBaseUrl: "https://git.example:3000/api/v1" });
    expect(n("slack", "t0123abcd")).toMatchObject({ accountKey: "T0123ABCD", apiBaseUrl: "https://slack.com/api" });
    expect(n("cairn", "https://Cairn.Example/")).toMatchObject({ accountKey: "https://cairn.example", apiBaseUrl: "https://cairn.example" });
    // An explicit base URL wins, stored without a trailing slash.
    expect(n("gitea", "git.example", "http://127.0.0.1:8081/api/v1/")).toMatchObject({ apiBaseUrl: "http://127.0.0.1:8081/api/v1" });
  });

  it("names every bad field, never quoting the secret", () => {
    expect(problemPaths({ kind: "gitlab" })).toEqual(["kind"]);
    expect(problemPaths({ accountKey: "" })).toEqual(["account_key"]);
    expect(problemPaths({ accountKey: "github.com/acme" })).toEqual(["account_key"]);
    expect(problemPaths({ kind: "slack", accountKey: "C0123" })).toEqual(["account_key"]);
    expect(problemPaths({ kind: "cairn", accountKey: "https://cairn.example/path" })).toEqual(["account_key"]);
    expect(problemPaths({ apiBaseUrl: "ftp://x.example" })).toEqual(["api_base_url"]);
    expect(problemPaths({ apiBaseUrl: "https://user:pw@x.example" })).toEqual(["api_base_url"]);
    expect(problemPaths({ apiBaseUrl: "https://x.example/api?token=1" })).toEqual(["api_base_url"]);
    expect(problemPaths({ apiBaseUrl: "https://x.example/api#x" })).toEqual(["api_base_url"]);
    expect(problemPaths({ targets: ["acme/*", "acme", "a/b/c", "*", "acme/../x"] })).toEqual(["targets[1]", "targets[2]", "targets[4]"]);
    expect(problemPaths({ kind: "slack", accountKey: "T1", targets: ["C0123", "#general"] })).toEqual(["targets[1]"]);
    expect(problemPaths({ kind: "cairn", accountKey: "https://c.example", targets: ["art-*", "a/b"] })).toEqual(["targets[1]"]);
    expect(problemPaths({ secret: "" })).toEqual(["secret"]);
    expect(problemPaths({ secret: "line1\nline2" })).toEqual(["secret"]);
    try {
      normaliseConnectionInput({ kind: "github", accountKey: "github.com", secret: " ghp_spaced-secret-value " });
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).not.toContain("ghp_spaced-secret-value");
      expect(JSON.stringify((error as SwitchyardError).details)).not.toContain("ghp_spaced-secret-value");
    }
  });

  it("keeps targets in their stored form (Slack ids upper case), duplicates dropped", () => {
    expect(normaliseConnectionInput({ kind: "slack", accountKey: "T1X", targets: ["c01", "C01", "C02"], secret: "x" }).targets).toEqual(["C01", "C02"]);
  });
});

describe("connection store", () => {
  let db: TestDatabase;
  const cipher = cipherOf(keyItem("k1"));
  const tx = <T>(fn: Parameters<typeof withTransaction<T>>[1]) => withTransaction(db.pool, fn);

  beforeAll(async () => {
    db = await createTestDatabase();
    await createTenant(stores.tenants, db.pool, { orgId: "acme", name: "Acme" });
    await createTenant(stores.tenants, db.pool, { orgId: "globex", name: "Globex" });
  });
  afterAll(async () => {
    await db.drop();
  });

  it("refuses to add or rotate without an encryption key, storing nothing (confirmation 5)", async () => {
    const secret = uniqueSecret();
    let error: unknown;
    try {
      await tx((c) => addConnection(stores, c, undefined, "acme", { kind: "github", accountKey: "nokey.example", secret }, { actor: "test" }));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SwitchyardError);
    expect((error as SwitchyardError).code).toBe(ErrorCode.FailedPrecondition);
    expect((error as SwitchyardError).message).toMatch(new RegExp(`^adding a connection is refused: no encryption key is configured.*${ENCRYPTION_KEY_VARIABLE}`));
    expect((await db.pool.query("SELECT count(*)::int AS n FROM connections")).rows[0].n).toBe(0);
    await expect(tx((c) => rotateConnection(stores, c, undefined, "acme", "00000000-0000-4000-8000-000000000000", secret, { actor: "t" }))).rejects.toMatchObject({
      code: ErrorCode.FailedPrecondition,
    });
  });

  it("adds, lists, rotates and deletes, auditing each change with fingerprints and never the secret", async () => {
    const first = uniqueSecret();
    const second = uniqueSecret();
    const added = await tx((c) => addConnection(stores, c, cipher, "acme", { kind: "github", accountKey: "GitHub.com", targets: ["acme/*"], secret: first }, { actor: "alice", nowMs: 1_800_000_000_000 }));
    expect(added).toMatchObject({ orgId: "acme", kind: "github", accountKey: "github.com", apiBaseUrl: "https://api.github.com", targets: ["acme/*"], botId: null, appId: null, createdBy: "alice", rotatedAt: null });
    expect(added.fingerprint).toBe(cipher.fingerprint(first));
    expect(added.createdAt).toBe(new Date(1_800_000_000_000).toISOString());
    expect(JSON.stringify(added)).not.toContain(first);
    expect(await getConnection(stores.connections, db.pool, "acme", added.id)).toEqual(added);

    // One per (tenant, kind, account): however the account is spelt.
    await expect(tx((c) => addConnection(stores, c, cipher, "acme", { kind: "github", accountKey: "GITHUB.COM", secret: second }, { actor: "alice" }))).rejects.toMatchObject({
      code: ErrorCode.AlreadyExists,
      message: "tenant acme already has a github connection for github.com; rotate its secret or delete it first (connection list shows its id)",
    });
    // Another tenant has its own namespace.
    const globex = await tx((c) => addConnection(stores, c, cipher, "globex", { kind: "github", accountKey: "github.com", secret: second }, { actor: "bob" }));
    expect(globex.id).not.toBe(added.id);

    const rotated = await tx((c) => rotateConnection(stores, c, cipher, "acme", added.id, second, { actor: "alice" }));
    expect(rotated.fingerprint).toBe(cipher.fingerprint(second));
    expect(rotated.rotatedAt).not.toBeNull();
    expect(await openConnectionSecret(stores.connections, db.pool, cipher, "acme", added.id)).toBe(second);
    // Another tenant cannot rotate or delete it by id.
    await expect(tx((c) => rotateConnection(stores, c, cipher, "globex", added.id, first, { actor: "bob" }))).rejects.toMatchObject({ code: ErrorCode.NotFound });
    await expect(tx((c) => deleteConnection(stores, c, "globex", added.id, { actor: "bob" }))).rejects.toMatchObject({ code: ErrorCode.NotFound });
    await expect(tx((c) => deleteConnection(stores, c, "acme", "not-a-uuid", { actor: "bob" }))).rejects.toMatchObject({ code: ErrorCode.NotFound });

    await recordConnectionBot(stores.connections, db.pool, "acme", added.id, { botId: "B01", appId: "A01" });
    expect(await getConnection(stores.connections, db.pool, "acme", added.id)).toMatchObject({ botId: "B01", appId: "A01" });

    expect((await listConnections(stores.connections, db.pool, "acme")).map((c) => c.id)).toEqual([added.id]);
    const deleted = await tx((c) => deleteConnection(stores, c, "acme", added.id, { actor: "alice" }));
    expect(deleted.id).toBe(added.id);
    expect(await listConnections(stores.connections, db.pool, "acme")).toEqual([]);
    expect((await listConnections(stores.connections, db.pool, "globex")).map((c) => c.id)).toEqual([globex.id]);

    const audit = await db.pool.query("SELECT * FROM audit_log WHERE org_id = 'acme' AND action = 'connection' ORDER BY seq");
    expect(audit.rows.map((r) => [r.verdict, r.actor, r.destination, r.rule])).toEqual([
      ["added", "alice", `connection:${added.id}`, "github:github.com"],
      ["rotated", "alice", `connection:${added.id}`, "github:github.com"],
      ["deleted", "alice", `connection:${added.id}`, "github:github.com"],
    ]);
    expect(audit.rows[0].reason).toContain(cipher.fingerprint(first));
    expect(audit.rows[1].reason).toBe(`fingerprint ${cipher.fingerprint(first)} -> ${cipher.fingerprint(second)}`);
    const everything = JSON.stringify((await db.pool.query("SELECT * FROM audit_log")).rows);
    expect(everything).not.toContain(first);
    expect(everything).not.toContain(second);
    expect((await verifyChain(createPostgresAuditStore(), db.pool, "acme")).ok).toBe(true);
  });

  it("under row-level security a tenant's transaction sees and changes only its own connections", async () => {
    const a = await tx((c) => addConnection(stores, c, cipher, "acme", { kind: "slack", accountKey: "T0ACME", secret: uniqueSecret("xoxb-") }, { actor: "t" }));
    const g = await tx((c) => addConnection(stores, c, cipher, "globex", { kind: "slack", accountKey: "T0GLOBEX", secret: uniqueSecret("xoxb-") }, { actor: "t" }));
    await withTenantTransaction(db.pool, "globex", async (client) => {
      // No WHERE org_id: RLS alone hides the other tenant's rows.
      const { rows } = await client.query("SELECT id, org_id FROM connections");
      expect(rows.every((r) => r.org_id === "globex")).toBe(true);
      expect(rows.map((r) => r.id)).toContain(g.id);
      expect(rows.map((r) => r.id)).not.toContain(a.id);
      expect((await client.query("UPDATE connections SET targets = '{x}' WHERE id = $1", [a.id])).rowCount).toBe(0);
      expect((await client.query("DELETE FROM connections WHERE id = $1", [a.id])).rowCount).toBe(0);
      // Nor can it write a row for another tenant.
      await expect(
        client.query("INSERT INTO connections (id, org_id, kind, account_key, api_base_url, secret_ciphertext, secret_fingerprint, created_by) VALUES (gen_random_uuid(), 'acme', 'gitea', 'x.example', 'https://x.example', 'v1.k1.a.b', 'fp_0', 't')"),
      ).rejects.toMatchObject({ code: "42501" });
    });
    // The store's own functions, run tenant-scoped, agree.
    await withTenantTransaction(db.pool, "globex", async (client) => {
      await expect(getConnection(stores.connections, client, "globex", a.id)).rejects.toMatchObject({ code: ErrorCode.NotFound });
      expect((await listConnections(stores.connections, client, "acme")).length).toBe(0);
    });
    expect((await getConnection(stores.connections, db.pool, "acme", a.id)).targets).toEqual([]);
  });
});
