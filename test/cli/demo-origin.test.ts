/**
 * `switchyard demo origin` as a newcomer runs it: a separate process that must end by itself with exit 0 after the
 * whole loop — signed webhook in, the worker's reply out to the stand-in forge with the tenant's token, the echo
 * recognised — and must never print the token or the webhook secret.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { redisUrl } from "../support/env.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";
import { runDemoProcess } from "./demo-process.js";

let db: TestDatabase;
let redis: TestRedis;
beforeAll(async () => {
  db = await createTestDatabase();
  redis = await createTestRedis();
});
afterAll(async () => {
  await redis?.cleanup();
  await db?.drop();
});

function run(args: string[], killAfterMs: number) {
  return runDemoProcess(args, { DATABASE_URL: db.url, REDIS_URL: redisUrl(), SWITCHYARD_KEY_PREFIX: redis.prefix }, killAfterMs);
}

describe("switchyard demo origin", () => {
  it("answers a signed issue comment in the issue, recognises its own echo, and exits 0 by itself", async () => {
    const result = await run(["demo", "origin", "--timeout", "60"], 80_000);
    const context = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
    expect(result.signal, context).toBeNull();
    expect(result.code, context).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(/switching on .*REPLY_ENABLED \(global, tenant:demo\)/);
    expect(out).toMatch(/202: task \S+; reply address from the verified body: forge_comment 127\.0\.0\.1:\d+\/acme\/app#7/);
    expect(out).toMatch(/ctx\.reply\(text\): sent, http:\/\/127\.0\.0\.1:\d+\/acme\/app\/issues\/7#issuecomment-\d+/);
    expect(out).toMatch(/the forge received POST \/repos\/acme\/app\/issues\/7\/comments with Authorization: token ghp_demo…\(40 chars\)/);
    expect(out).toContain('200 {"cause":"self_reply"}: recognised as our own reply, no task started');
    expect(out).toMatch(/respond\s+origin_reply\s+worker:role:responder\s+127\.0\.0\.1:\d+\/acme\/app#7\s+allow/);
    expect(out).toMatch(/audit chain of tenant demo is intact/);
    expect(out).toContain("Demo finished");
    // The token is 32 hex characters after ghp_demo; the webhook secret 64 hex characters: neither is ever printed.
    expect(out + result.stderr).not.toMatch(/ghp_demo[0-9a-f]{8}/);
    expect(out + result.stderr).not.toMatch(/[0-9a-f]{64}/);
  }, 90_000);

  it("refuses an unknown scenario with a clear message", async () => {
    const result = await run(["demo", "fireworks"], 30_000);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/unknown demo "fireworks": choose workflow \(the default\), origin, mcp or orchestrator/);
  }, 40_000);
});
