/**
 * The operator commands (tenant, apikey, dlq, flags list, limits list) in direct mode go through the gateway's
 * AdminService handlers run in-process (src/cli/remote/admin-api.ts), the operator acting as an admin for no
 * tenant: what only a handler checks is checked, and `--json` prints byte for byte what the stores' records print.
 */
import { createPostgresStores } from "../../src/store/postgres-stores.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tenantJson } from "../../src/cli/commands/tenant.js";
import { apiKeyJson } from "../../src/cli/commands/apikey.js";
import { loadConfig } from "../../src/config/index.js";
import { setLimit } from "../../src/fairness/limit-changes.js";
import { listLimits, createPostgresLimitStore } from "../../src/store/limits/postgres-limit-store.js";
import { setFlag } from "../../src/flags/flag-changes.js";
import { listFlags, createPostgresFlagStore } from "../../src/store/flags/postgres-flag-store.js";
import { FlagValues } from "../../src/flags/flag-values.js";
import { listApiKeys } from "../../src/tenancy/api-keys.js";
import { listTenants } from "../../src/tenancy/tenants.js";
import { createCliEnvironment, type CliEnvironment } from "./helpers.js";

const stores = createPostgresStores();

let cli: CliEnvironment;
beforeAll(async () => {
  cli = await createCliEnvironment({ tenants: [] });
});
afterAll(async () => {
  await cli?.cleanup();
});

describe("operator commands through AdminService (direct mode)", () => {
  it("refuses what only the AdminService handler checks: a dead-letter limit over 10 000, a stream name as a request field", async () => {
    const tooMany = await cli.run(["dlq", "list", "--limit", "10001"]);
    expect(tooMany.stderr).toBe("error: INVALID_ARGUMENT: limit: must be from 1 to 10000\n");
    expect(tooMany.code).toBe(2);
    // The handler names the request field it checked (`stream: …`); the CLI's own check never did.
    const badStream = await cli.run(["dlq", "list", "--stream", "{bad}"]);
    expect(badStream.stderr).toMatch(/^error: INVALID_ARGUMENT: stream: stream name "\{bad\}" is not valid/);
    expect(badStream.code).toBe(2);
  });

  it("needs no --tenant, and prints exactly the records the stores return", async () => {
    const created = await cli.run(["tenant", "create", "acme", "--daily-budget", "5", "--json"]);
    expect(created.code).toBe(0);
    expect((await cli.run(["apikey", "create", "--admin", "--name", "sre"])).code).toBe(0);
    const revoked = JSON.parse((await cli.run(["apikey", "create", "--tenant", "acme", "--name", "old", "--json"])).last).apiKey.id as string;
    expect((await cli.run(["apikey", "revoke", revoked])).code).toBe(0);
    await setLimit(createPostgresLimitStore(), cli.db.pool, { orgId: "acme", destination: "role:writer", maxInFlight: 3, ratePerSec: 2.5, burst: null, weight: null }, { actor: "sre", reason: "noisy" });
    await setLimit(createPostgresLimitStore(), cli.db.pool, { orgId: "", destination: "role:writer", maxInFlight: 10, ratePerSec: null, burst: null, weight: null }, { actor: "sre", reason: "capacity" });
    await setFlag(createPostgresFlagStore(), cli.db.pool, { name: "HARNESS_ENABLED", scopeKind: "role", scope: "writer", enabled: false, actor: "sre", reason: "draining" });

    const json = async (argv: string[]) => {
      const run = await cli.run([...argv, "--json"]);
      expect(run.code, argv.join(" ")).toBe(0);
      return run.last;
    };
    const pool = cli.db.pool;
    expect(await json(["tenant", "list"])).toBe(JSON.stringify({ tenants: (await listTenants(stores.tenants, pool)).map(tenantJson) }));
    expect(await json(["apikey", "list"])).toBe(JSON.stringify({ apiKeys: (await listApiKeys(stores.apiKeys, pool)).map(apiKeyJson) }));
    expect(await json(["apikey", "list", "--tenant", "acme"])).toBe(JSON.stringify({ apiKeys: (await listApiKeys(stores.apiKeys, pool, { orgId: "acme" })).map(apiKeyJson) }));
    expect(await json(["limits", "list"])).toBe(JSON.stringify(await listLimits(pool)));
    expect(await json(["flags", "list"])).toBe(JSON.stringify(new FlagValues(loadConfig(cli.env).flags, await listFlags(pool)).describe()));
    expect(await json(["tenant", "budget", "acme", "--none"])).toBe(JSON.stringify(tenantJson((await listTenants(stores.tenants, pool))[0]!)));
  });

  it("opens the runtime the handlers run on: an unreachable Redis is named, as for the tenant commands", async () => {
    const down = await cli.run(["tenant", "list", "--redis-url", "redis://127.0.0.1:1"]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^error: UNAVAILABLE: Redis at 127\.0\.0\.1:1 is not answering \(--redis-url\)/);
  });
});
