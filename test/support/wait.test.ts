/**
 * The progress-based waits tell "slow" from "stuck": they wait as long as the state keeps changing, and fail soon
 * after it stops, naming what is stuck.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "./runtime.js";
import { waitForProgress, waitForTask, waitForTasks } from "./wait.js";

describe("waitForProgress", () => {
  it("keeps waiting far past stallMs while the state moves, and returns the state awaited", async () => {
    let n = 0;
    const started = Date.now();
    const result = await waitForProgress({ what: "n to reach 12", progress: () => n++, done: (v) => v >= 12, stallMs: 200, intervalMs: 50 });
    expect(result).toBe(12);
    expect(Date.now() - started).toBeGreaterThan(400);
  });

  it("fails once nothing moved for stallMs, with what describeStuck says", async () => {
    const started = Date.now();
    await expect(
      waitForProgress({ what: "the moon", progress: () => "still", done: () => false, stallMs: 300, intervalMs: 20, describeStuck: (s) => `state is ${s}` }),
    ).rejects.toThrow(/^stuck waiting for the moon: nothing moved for 0 s\nstate is still$/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });
});

describe("waitForTask / waitForTasks", () => {
  let rt: TestRuntime;
  let stuckTask: string;
  beforeAll(async () => {
    rt = await createTestRuntime();
    await submitWorkflow(rt.pool, "acme", parseWorkflowDefinition("name: nowhere\nsteps:\n  - { id: a, to: 'role:nobody' }\n  - { id: b, to: 'role:nobody', needs: [a] }\n"));
    stuckTask = (await rt.tasks.start({ orgId: "acme", workflow: "nowhere" })).taskId;
  });
  afterAll(async () => {
    await rt?.cleanup();
  });

  it("name the unfinished task and the state of each of its steps when nothing moves", async () => {
    await expect(waitForTask(rt.tasks, "acme", stuckTask, { stallMs: 300, intervalMs: 50 })).rejects.toThrow(
      new RegExp(`^stuck waiting for task ${stuckTask} to finish: nothing moved for 0 s\\ntask ${stuckTask} is running: step a \\(role:nobody\\) dispatched, attempt 1; step b \\(role:nobody\\) pending$`),
    );
    const error = await waitForTasks(rt.pool, { orgId: "acme", stallMs: 300, intervalMs: 50 }).catch((e: Error) => e);
    expect((error as Error).message).toContain("stuck waiting for every task to finish");
    expect((error as Error).message).toContain(`task ${stuckTask} is running: step a (role:nobody) dispatched, attempt 1; step b (role:nobody) pending`);
  });

  it("return once every task has finished", async () => {
    await rt.tasks.cancel("acme", stuckTask, "test", "done");
    expect(await waitForTasks(rt.pool, { orgId: "acme", stallMs: 300 })).toMatchObject({ tasks: { cancelled: 1 } });
  });
});
