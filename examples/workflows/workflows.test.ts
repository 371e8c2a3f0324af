/**
 * A workflow-level test with the public testing kit: the example three-step workflow through the real coordinator
 * (on a scratch database and key prefix), served by the example echo handler.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestStack, type TestStack } from "switchyard/testing";
import echo from "../handlers/echo.js";

describe("examples/workflows/three-step.yaml", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("runs its three echo steps in order, each seeing the one before", async () => {
    await stack.submitWorkflow(readFileSync(new URL("./three-step.yaml", import.meta.url), "utf8"));
    stack.register("role:echo", echo);
    const task = await stack.runTask("three-step", { n: 7 });
    expect(task.status).toBe("completed");
    expect(task.steps.map((s) => [s.id, s.status, s.attempts])).toEqual([["one", "completed", 1], ["two", "completed", 1], ["three", "completed", 1]]);
    expect(task.steps[1]!.output).toEqual({ task: { n: 7 }, steps: { one: { task: { n: 7 }, steps: {} } } });
    expect(task.cost).toBeCloseTo(0.3);
  });
});
