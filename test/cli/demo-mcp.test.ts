/**
 * `switchyard demo mcp` as a newcomer runs it: a separate process that must end by itself with exit 0 after
 * role → MCP tool → role — the example MCP server registered and described through the egress guard, the tool called
 * exactly once, its structured answer the step's output, the hop audited as a2a_egress and the chain intact.
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

describe("switchyard demo mcp", () => {
  it("runs writer → MCP tool → publisher, calls the tool once, prints the hops and exits 0 by itself; again on the same database", async () => {
    for (const pass of [1, 2]) {
      const result = await run(["demo", "mcp", "--timeout", "60", "--topic", "tide pools"], 80_000);
      const context = `pass ${pass}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
      expect(result.signal, context).toBeNull();
      expect(result.code, context).toBe(0);
      const out = result.stdout;
      expect(out, context).toContain(pass === 1 ? 'Registered foreign agent "text-stats"' : 'Updated the registration of foreign agent "text-stats"');
      expect(out, context).toMatch(/described through the egress guard: text-stats \(MCP\) tool text_stats, delivery call/);
      expect(out, context).toMatch(/The tool was called 1 time\(s\); its answer, the "measure" step's output: \{"words":\d+,"sentences":\d+,"longestWord":"\w+","readingSeconds":\d+\}/);
      expect(out, context).toMatch(/dialect mcp, foreign id mcp:[0-9a-f-]{36}/);
      expect(out, context).toMatch(/measure\s+a2a_egress\s+coordinator\s+foreign:text-stats\s+allow/);
      expect(out, context).toMatch(/measure\s+result\s+foreign:text-stats\s+.*accepted/);
      expect(out, context).toMatch(/audit chain of tenant demo is intact/);
      expect(out, context).toContain("Demo finished");
    }
  }, 180_000);
});
