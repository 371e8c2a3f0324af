/**
 * The coordinator checks a step's input at dispatch and its handler's output at result against the schemas the
 * workflow names, and fails the step closed — not retried — with the JSON path of the problem.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestStack, type TestStack } from "../../src/sdk/testing.js";

const WORKFLOW = {
  name: "priced",
  steps: [
    {
      id: "price",
      to: "role:pricer",
      retries: 2,
      backoff: "10ms",
      input_schema: { type: "object", properties: { task: { type: "object", required: ["item", "quantity"], properties: { quantity: { type: "integer", minimum: 1 } } } } },
      output_schema: { type: "object", required: ["total"], properties: { total: { type: "number" } } },
    },
  ],
};

describe("step schemas at run time", () => {
  let stack: TestStack;
  let runs = 0;
  beforeAll(async () => {
    stack = await createTestStack({ orgId: "shop" });
    await stack.submitWorkflow(WORKFLOW);
    stack.register("role:pricer", (work: { input: { task: { quantity: number; total?: unknown } } }) => {
      runs += 1;
      return { total: work.input.task.total ?? work.input.task.quantity * 2 };
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("runs a step whose input and output match", async () => {
    const task = await stack.runTask("priced", { item: "tea", quantity: 3 });
    expect([task.status, task.steps[0]!.output]).toEqual(["completed", { total: 6 }]);
  });

  it("fails a step whose input does not match at dispatch, before any handler runs", async () => {
    const before = runs;
    const task = await stack.runTask("priced", { item: "tea", quantity: 0 });
    expect(task.status).toBe("failed");
    expect(task.steps[0]!.error).toEqual({ code: "INPUT_SCHEMA", message: "step price input does not match its input_schema at $.task.quantity: must be >= 1", retryable: false });
    expect(task.steps[0]!.attempts).toBe(0);
    expect(runs).toBe(before);
    const { rows: audit } = await stack.client.audit.listRows({ taskId: task.id });
    expect(audit.map((a) => `${a.action}:${a.verdict}:${a.rule}`)).toEqual(["dispatch:deny:builtin:input-schema"]);
  });

  it("fails a step whose output does not match at result, without a retry", async () => {
    const before = runs;
    const task = await stack.runTask("priced", { item: "tea", quantity: 1, total: "lots" });
    expect(task.status).toBe("failed");
    expect(task.steps[0]!.error).toEqual({ code: "OUTPUT_SCHEMA", message: "step price output does not match its output_schema at $.total: must be number", retryable: false });
    expect([task.steps[0]!.attempts, runs - before]).toEqual([1, 1]);
    const { rows: audit } = await stack.client.audit.listRows({ taskId: task.id });
    expect(audit.map((a) => `${a.action}:${a.verdict}:${a.rule}`)).toEqual(["dispatch:allow:builtin:default", "result:failed:builtin:output-schema"]);
  });

  it("refuses a bad schema at submit, naming the step and the problem", async () => {
    await expect(stack.submitWorkflow({ name: "broken", steps: [{ id: "x", to: "role:pricer", output_schema: { type: "objekt" } }] })).rejects.toMatchObject({
      code: "INVALID_WORKFLOW",
      message: expect.stringMatching(/^steps\[0\]\.output_schema: is not a usable JSON Schema/),
    });
  });
});
