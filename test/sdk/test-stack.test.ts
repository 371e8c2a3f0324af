/**
 * createTestStack: the real coordinator and harnesses on a scratch database and key prefix, and a teardown that
 * leaves neither behind.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NonRetryableError, SwitchyardError, ErrorCode, type Handler } from "../../src/sdk/harness.js";
import { createTestStack, type TestStack } from "../../src/sdk/testing.js";
import { adminUrl, redisUrl } from "../support/env.js";
import { testRedisConnection } from "../support/redis.js";

interface Order { item: string; quantity: number }

describe("createTestStack", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ orgId: "shop" });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("runs a workflow through the real coordinator with typed handlers, delegation included", async () => {
    await stack.submitWorkflow(`
name: order
steps:
  - { id: price, to: "role:pricer" }
  - { id: confirm, to: "role:confirmer" }
`);
    const pricer: Handler<{ task: Order }, { total: number }> = async (work, ctx) => {
      if (!work.resume) return ctx.delegate("role:catalog", { item: work.input.task.item });
      const unit = (await ctx.readResult(work.resume.reply.resultRef)) as number;
      return { total: unit * work.input.task.quantity };
    };
    stack.register("role:pricer", pricer);
    stack.register("catalog", () => 2.5);
    stack.register("role:confirmer", (work: { input: { steps: { price: { total: number } } } }) => `pay ${work.input.steps.price.total}`);
    const task = await stack.runTask("order", { item: "tea", quantity: 4 });
    expect(task.status).toBe("completed");
    expect(task.steps.filter((s) => s.kind === "workflow").map((s) => [s.id, s.output])).toEqual([["price", { total: 10 }], ["confirm", "pay 10"]]);
  });

  it("fails a step at once on NonRetryableError (and on the old INVALID_ARGUMENT), retries a plain throw", async () => {
    await stack.submitWorkflow(`
name: strict
steps:
  - { id: only, to: "role:strict", retries: 2, backoff: 10ms }
`);
    stack.register("role:strict", (work: { input: { task: string } }) => {
      if (work.input.task === "refuse") throw new NonRetryableError("no such order", { code: "UNKNOWN_ORDER" });
      if (work.input.task === "invalid") throw new SwitchyardError(ErrorCode.InvalidArgument, "bad order");
      throw new Error("flaky");
    });
    const refused = await stack.runTask("strict", "refuse");
    expect([refused.status, refused.steps[0]!.attempts, refused.steps[0]!.error?.code]).toEqual(["failed", 1, "UNKNOWN_ORDER"]);
    const invalid = await stack.runTask("strict", "invalid");
    expect([invalid.status, invalid.steps[0]!.attempts, invalid.steps[0]!.error?.code]).toEqual(["failed", 1, "INVALID_ARGUMENT"]);
    const flaky = await stack.runTask("strict", "flaky");
    expect([flaky.status, flaky.steps[0]!.attempts, flaky.steps[0]!.error?.code]).toEqual(["failed", 3, "HANDLER_FAILED"]);
  });

  it("says which step is stuck when nothing moves", async () => {
    await stack.submitWorkflow(`name: nobody\nsteps:\n  - { id: lonely, to: "role:nobody-reads" }\n`);
    const taskId = await stack.startTask("nobody");
    await expect(stack.waitForTask(taskId, { stallMs: 1_000 })).rejects.toThrow(/stuck waiting for task .*step lonely \(role:nobody-reads\) dispatched/s);
  });

  it("leaves no database and no Redis key behind once closed", async () => {
    const other = await createTestStack();
    await other.submitWorkflow(`name: one\nsteps:\n  - { id: a, to: "role:echo" }\n`);
    other.register("echo", (work) => work.input);
    expect((await other.runTask("one", 1)).status).toBe("completed");
    const name = new URL(other.databaseUrl).pathname.slice(1);
    await other.close();
    await other.close();
    const admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
    const { rowCount } = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    await admin.end();
    expect(rowCount).toBe(0);
    const redis = testRedisConnection(redisUrl());
    await redis.connect();
    const keys = await redis.keys(`${other.keyPrefix}*`);
    redis.disconnect();
    expect(keys).toEqual([]);
  });
});
