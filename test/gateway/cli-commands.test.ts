/**
 * The operator commands of this area, run in-process: `tenant create|list|budget`, `apikey create|list|revoke`
 * (straight against the database; keys printed once) and `start gateway` until its stop signal.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.js";
import { formatPublisherKey } from "../../src/bus/auth/bus-keys.js";
import { testBusAuth } from "../support/bus-auth.js";
import { hashApiKey } from "../../src/tenancy/api-keys.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { FLAGS_ON_ENV, redisUrl } from "../support/env.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

describe("tenant, apikey and start gateway commands", () => {
  let db: TestDatabase;
  let redis: TestRedis;
  let env: Record<string, string>;

  async function cli(argv: string[], options: { signal?: AbortSignal; onStdout?: (text: string) => void } = {}) {
    let stdout = "";
    let stderr = "";
    const code = await runCli(argv, {
      env,
      stdout: {
        write: (t: string) => {
          stdout += t;
          options.onStdout?.(stdout);
        },
      },
      stderr: { write: (t: string) => (stderr += t) },
      handleSignals: false,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const lines = stdout.split("\n").filter(Boolean);
    return { code, stdout, stderr, last: lines.at(-1) ?? "" };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    redis = await createTestRedis();
    env = { ...FLAGS_ON_ENV, DATABASE_URL: db.url, REDIS_URL: redisUrl(), SWITCHYARD_KEY_PREFIX: redis.prefix, SWITCHYARD_LOG_LEVEL: "info" };
  });
  afterAll(async () => {
    await redis.cleanup();
    await db.drop();
  });

  it("tenant create prints the key once, last; only its hash is stored; a taken id exits 1", async () => {
    const created = await cli(["tenant", "create", "acme", "--name", "Acme Corp", "--daily-budget", "250"]);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^created tenant acme \(Acme Corp\), daily budget 250\nAPI key for tenant acme "default" \(id [0-9a-f-]{36}\); it is shown only now/);
    expect(created.last).toMatch(/^sy_[A-Za-z0-9_-]{43}$/);
    const { rows } = await db.pool.query("SELECT key_hash FROM api_keys WHERE org_id = 'acme'");
    expect(rows).toEqual([{ key_hash: hashApiKey(created.last) }]);
    const again = await cli(["tenant", "create", "acme"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe("error: ALREADY_EXISTS: tenant acme already exists\n");
    const bad = await cli(["tenant", "create", "Not Valid"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: INVALID_ARGUMENT: org_id: must match/);
    const json = JSON.parse((await cli(["tenant", "create", "globex", "--json"])).stdout);
    expect(json).toMatchObject({ tenant: { orgId: "globex", name: "globex", dailyBudget: null }, apiKey: { kind: "tenant", orgId: "globex", name: "default" } });
    expect(json.key).toMatch(/^sy_/);
    expect(JSON.parse((await cli(["tenant", "list", "--json"])).stdout).tenants.map((t: { orgId: string }) => t.orgId)).toEqual(["acme", "globex"]);
    expect((await cli(["tenant", "budget", "globex", "--daily", "12.5"])).stdout).toBe("tenant globex: daily budget 12.5\n");
    expect((await cli(["tenant", "budget", "globex", "--none"])).stdout).toBe("tenant globex: daily budget unbounded\n");
    expect((await cli(["tenant", "budget", "globex"])).code).toBe(2);
  });

  it("apikey create (tenant or admin), list (never the secret) and revoke", async () => {
    const admin = await cli(["apikey", "create", "--admin", "--name", "sre-ana"]);
    expect(admin.code).toBe(0);
    expect(admin.stdout).toMatch(/^admin key "sre-ana"/);
    const tenantKey = JSON.parse((await cli(["apikey", "create", "--tenant", "acme", "--name", "ci", "--json"])).stdout);
    expect(tenantKey.apiKey).toMatchObject({ kind: "tenant", orgId: "acme", name: "ci", revokedAt: null });
    expect((await cli(["apikey", "create", "--tenant", "ghost"])).code).toBe(1);
    expect((await cli(["apikey", "create"])).code).toBe(2);
    const listed = await cli(["apikey", "list"]);
    expect(listed.stdout).toContain("sre-ana");
    expect(listed.stdout).not.toContain(admin.last);
    const revoked = await cli(["apikey", "revoke", tenantKey.apiKey.id, "--json"]);
    expect(JSON.parse(revoked.stdout).revokedAt).not.toBeNull();
    expect(JSON.parse((await cli(["apikey", "list", "--tenant", "acme", "--json"])).stdout).apiKeys.map((k: { name: string; revokedAt: string | null }) => [k.name, k.revokedAt !== null])).toEqual([
      ["default", false],
      ["ci", true],
    ]);
  });

  it("start gateway refuses to start without its bus key", async () => {
    const refused = await cli(["start", "gateway", "--port", "0", "--host", "127.0.0.1"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/CONFIG: no bus key to publish as gateway: set SWITCHYARD_BUS_KEY/);
  });

  it("start gateway serves until its stop signal, then exits 0", async () => {
    // What an operator hands the gateway: its own key (README, Bus authentication), not the master secret.
    env = { ...env, SWITCHYARD_BUS_KEY: formatPublisherKey(testBusAuth().publisherKey("gateway")) };
    const stop = new AbortController();
    let url: string | undefined;
    const running = cli(["start", "gateway", "--port", "0", "--host", "127.0.0.1"], {
      signal: stop.signal,
      onStdout: (text) => {
        url ??= /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(text)?.[1];
      },
    });
    for (let i = 0; i < 200 && url === undefined; i++) await new Promise((r) => setTimeout(r, 25));
    expect(url).toBeDefined();
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    stop.abort();
    const done = await running;
    expect(done.code).toBe(0);
    expect(done.stdout).toContain("gateway stopped");
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});
