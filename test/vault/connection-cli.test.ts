/**
 * `switchyard connection add|rotate|delete|list` and `vault rewrap`, run in-process against the database and
 * through a gateway: the secret only from stdin (a flag is refused without echo), refusal without an encryption key
 * (confirmation 5), and no CLI output ever carries a secret (confirmation 7, CLI side).
 */
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.js";
import { startGateway, type Gateway } from "../../src/gateway/server.js";
import { createTenantWithKey } from "../../src/tenancy/bootstrap.js";
import { openConnectionSecret } from "../../src/vault/connection-secret.js";
import { ENCRYPTION_KEY_VARIABLE, parseEncryptionKeys } from "../../src/vault/secret-cipher.js";
import { redisUrl } from "../support/env.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { cipherOf, keyItem, uniqueSecret } from "./helpers.js";

describe("connection and vault commands", () => {
  let rt: TestRuntime;
  let gateway: Gateway;
  let acmeKey: string;
  const k1 = keyItem("k1");
  const secrets: string[] = [];
  const outputs: string[] = [];

  const secret = (prefix?: string) => {
    const s = uniqueSecret(prefix);
    secrets.push(s);
    return s;
  };

  async function cli(argv: string[], options: { stdin?: string; key?: string | null; env?: Record<string, string> } = {}) {
    let stdout = "";
    let stderr = "";
    const env: Record<string, string> = { DATABASE_URL: rt.db.url, REDIS_URL: redisUrl(), SWITCHYARD_KEY_PREFIX: rt.prefix, ...options.env };
    if (options.key !== null) env[ENCRYPTION_KEY_VARIABLE] = options.key ?? k1;
    const code = await runCli(argv, {
      env,
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: (t: string) => (stderr += t) },
      handleSignals: false,
      stdin: Readable.from(options.stdin === undefined ? [] : [Buffer.from(options.stdin)]),
    });
    outputs.push(stdout, stderr);
    return { code, stdout, stderr };
  }

  beforeAll(async () => {
    rt = await createTestRuntime();
    acmeKey = (await createTenantWithKey(rt.stores, rt.pool, { orgId: "acme", name: "Acme" })).apiKey.secret;
    await createTenantWithKey(rt.stores, rt.pool, { orgId: "globex", name: "Globex" });
    const withKey = { ...rt, config: { ...rt.config, origin: { ...rt.config.origin, encryptionKeys: parseEncryptionKeys(k1) } } };
    gateway = await startGateway(withKey, { port: 0, host: "127.0.0.1", shutdownGraceMs: 2000 });
  });
  afterAll(async () => {
    await gateway?.close();
    await rt?.cleanup();
  });

  it("adds from stdin (one trailing newline dropped), lists, rotates and deletes against the database", async () => {
    const first = secret();
    const added = await cli(["connection", "add", "--tenant", "acme", "--kind", "github", "--account", "GitHub.com", "--targets", "acme/*, acme2/x", "--secret-stdin", "--json"], { stdin: `${first}\n` });
    expect(added.stderr).toBe("");
    expect(added.code).toBe(0);
    const connection = JSON.parse(added.stdout);
    expect(connection).toMatchObject({ orgId: "acme", kind: "github", accountKey: "github.com", apiBaseUrl: "https://api.github.com", targets: ["acme/*", "acme2/x"], createdBy: "cli" });
    // Exactly the piped secret, less its newline, is what is stored.
    expect(await openConnectionSecret(rt.stores.connections, rt.pool, cipherOf(k1), "acme", connection.id)).toBe(first);

    const text = await cli(["connection", "add", "--tenant", "acme", "--kind", "gitea", "--account", "git.example:3000", "--api-url", "http://127.0.0.1:3000/api/v1/", "--secret-stdin", "--actor", "alice"], { stdin: secret() });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^added gitea connection [0-9a-f-]{36} for tenant acme: account git\.example:3000, api http:\/\/127\.0\.0\.1:3000\/api\/v1, targets \* \(secret fp_[0-9a-f]{16}\)\n$/);

    const listed = await cli(["connection", "list", "--tenant", "acme"]);
    expect(listed.stdout).toContain("github.com");
    expect(listed.stdout).toContain(connection.fingerprint);
    expect(JSON.parse((await cli(["connection", "list", "--tenant", "acme", "--json"])).stdout).connections.map((c: { kind: string }) => c.kind)).toEqual(["gitea", "github"]);

    const second = secret();
    const rotated = await cli(["connection", "rotate", "--tenant", "acme", "--id", connection.id, "--secret-stdin"], { stdin: second });
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toMatch(new RegExp(`^rotated the secret of github connection ${connection.id} \\(github\\.com\\) for tenant acme: now fp_[0-9a-f]{16}\\n$`));
    expect(await openConnectionSecret(rt.stores.connections, rt.pool, cipherOf(k1), "acme", connection.id)).toBe(second);

    // Another tenant's id is not found from this tenant.
    expect((await cli(["connection", "delete", "--tenant", "globex", "--id", connection.id])).code).toBe(1);
    const deleted = await cli(["connection", "delete", "--tenant", "acme", "--id", connection.id]);
    expect(deleted.stdout).toBe(`deleted github connection ${connection.id} (github.com) for tenant acme\n`);
    expect((await cli(["connection", "list", "--tenant", "globex"])).stdout).toBe("no connections for tenant globex\n");
  });

  it("takes the secret only from stdin: a flag is refused without echoing it, empty stdin is refused", async () => {
    const leaked = secret();
    const flag = await cli(["connection", "add", "--tenant", "acme", "--kind", "slack", "--account", "T01", `--secret=${leaked}`]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/^error: INVALID_ARGUMENT: --secret: a secret is never taken from a flag/);
    const spaced = await cli(["connection", "add", "--tenant", "acme", "--kind", "slack", "--account", "T01", "--secret", secret(), "--secret-stdin"], { stdin: "x" });
    expect(spaced.code).toBe(2);
    const missing = await cli(["connection", "add", "--tenant", "acme", "--kind", "slack", "--account", "T01"], { stdin: secret() });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--secret-stdin is required");
    const empty = await cli(["connection", "add", "--tenant", "acme", "--kind", "slack", "--account", "T01", "--secret-stdin"], { stdin: "\n" });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("--secret-stdin: stdin was empty");
    const bad = await cli(["connection", "add", "--tenant", "acme", "--kind", "slack", "--account", "C01", "--secret-stdin", "--json"], { stdin: `${secret()}\n\n` });
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.stdout).error.message).toMatch(/^2 problems: account_key: must be the Slack team id.*; secret: must not contain line breaks/);
    expect((await cli(["connection", "list", "--tenant", "acme", "--json"])).stdout).not.toContain("slack");
  });

  it("refuses to add without an encryption key, naming the variable (confirmation 5)", async () => {
    const refused = await cli(["connection", "add", "--tenant", "acme", "--kind", "cairn", "--account", "https://cairn.example", "--secret-stdin"], { stdin: secret(), key: null });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `error: FAILED_PRECONDITION: adding a connection is refused: no encryption key is configured, so the secret could not be stored encrypted; set ${ENCRYPTION_KEY_VARIABLE} (32 bytes, base64: \`openssl rand -base64 32\`)\n`,
    );
    expect((await rt.pool.query("SELECT count(*)::int AS n FROM connections WHERE kind = 'cairn'")).rows[0].n).toBe(0);
  });

  it("through a gateway with a tenant API key: the key decides the tenant", async () => {
    const remote = { env: { SWITCHYARD_URL: gateway.url, SWITCHYARD_TOKEN: acmeKey } };
    const added = await cli(["connection", "add", "--kind", "cairn", "--account", "https://Cairn.example/", "--targets", "art-*", "--secret-stdin", "--json"], { ...remote, stdin: secret() });
    expect(added.stderr).toBe("");
    const connection = JSON.parse(added.stdout);
    expect(connection).toMatchObject({ kind: "cairn", accountKey: "https://cairn.example", apiBaseUrl: "https://cairn.example", targets: ["art-*"], createdBy: "apikey:default" });
    expect((await rt.pool.query("SELECT org_id FROM connections WHERE id = $1", [connection.id])).rows).toEqual([{ org_id: "acme" }]);
    expect((await cli(["connection", "list"], remote)).stdout).toContain("https://cairn.example");
    // The key cannot act for another tenant.
    const other = await cli(["connection", "list", "--tenant", "globex"], remote);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("refused the API key");
    const rotated = await cli(["connection", "rotate", "--id", connection.id, "--secret-stdin"], { ...remote, stdin: secret() });
    expect(rotated.stdout).toMatch(/^rotated the secret of cairn connection .* for the key's tenant: now fp_/);
    expect((await cli(["connection", "delete", "--id", connection.id], remote)).code).toBe(0);
  });

  it("vault rewrap re-seals every secret not sealed with the current key; the old key can then go", async () => {
    const s = secret("xoxb-");
    const added = JSON.parse((await cli(["connection", "add", "--tenant", "globex", "--kind", "slack", "--account", "T0GLOBEX", "--secret-stdin", "--json"], { stdin: s })).stdout);
    const k2 = keyItem("k2");
    // Without the old key the secret cannot be opened; with k2 first and k1 kept, rewrap moves it to k2.
    const rewrap = await cli(["vault", "rewrap", "--json"], { key: `${k2},${k1}` });
    expect(rewrap.code).toBe(0);
    expect(JSON.parse(rewrap.stdout)).toEqual({ keyId: "k2", connections: 2, ingestSecrets: 0 });
    expect(await openConnectionSecret(rt.stores.connections, rt.pool, cipherOf(k2), "globex", added.id)).toBe(s);
    expect(JSON.parse((await cli(["vault", "rewrap", "--json"], { key: `${k2},${k1}` })).stdout)).toEqual({ keyId: "k2", connections: 0, ingestSecrets: 0 });
    // A ring that cannot open an envelope stops with nothing changed.
    const k3 = keyItem("k3");
    const stuck = await cli(["vault", "rewrap"], { key: `${k3},${k1}` });
    expect(stuck.code).toBe(1);
    expect(stuck.stderr).toMatch(/^error: FAILED_PRECONDITION: connections [0-9a-f-]{36} \(secret_ciphertext\): a stored secret was sealed with key "k2"/);
    expect(await openConnectionSecret(rt.stores.connections, rt.pool, cipherOf(k2), "globex", added.id)).toBe(s);
    expect((await cli(["vault", "rewrap"], { key: null })).code).toBe(1);
  });

  it("no CLI output contains any secret used here (confirmation 7)", () => {
    expect(secrets.length).toBeGreaterThanOrEqual(10);
    const all = outputs.join("\n");
    expect(all).toContain("fp_");
    for (const s of secrets) expect(all).not.toContain(s);
  });
});
