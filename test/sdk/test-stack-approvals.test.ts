/**
 * The test stack's curated surface beyond tasks: `waitForStep`, `approve` / `deny` (decided through the tenant API,
 * so governed and audited as a tenant's decision) and `client` (the real switchyard/client, in process).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromValue, TaskStatus, toValue } from "../../src/sdk/client.js";
import { testStackInternals } from "../../src/sdk/test-stack.js";
import * as testing from "../../src/sdk/testing.js";
import { createTestStack, type TestStack } from "../../src/sdk/testing.js";

const PUBLISH = `
name: publish
steps:
  - { id: draft, to: "role:writer" }
  - { id: publish, to: "role:publisher", approval: true }
`;

const TWIN = `
name: twin
steps:
  - { id: left, to: "role:publisher", approval: true, needs: [] }
  - { id: right, to: "role:publisher", approval: true, needs: [] }
`;

describe("createTestStack: steps, approvals and the client", () => {
  let stack: TestStack;
  const published: string[] = [];
  beforeAll(async () => {
    stack = await createTestStack({ orgId: "press" });
    await stack.submitWorkflow(PUBLISH);
    await stack.submitWorkflow(TWIN);
    // No worker reads role:nobody-reads, and the step does not time out while a test looks at it.
    await stack.submitWorkflow(`name: nobody\nsteps:\n  - { id: lonely, to: "role:nobody-reads", timeout: 1h }\n`);
    stack.register("role:writer", (work: { input: { task: { topic: string } } }) => `draft on ${work.input.task.topic}`);
    stack.register("role:publisher", (work: { input: { task: { topic: string } } }) => {
      published.push(work.input.task.topic);
      return "published";
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it("approves the pending approval once the step parks, through the tenant API, and the task goes on", async () => {
    const taskId = await stack.startTask("publish", { topic: "tides" });
    // Without a step id: waits while `draft` runs and `publish` parks, then decides the only pending approval.
    const decision = await stack.approve(taskId, { reason: "looks good", actor: "alice" });
    expect(decision).toMatchObject({ taskId, stepId: "publish", status: "approved", decidedBy: "alice (apikey:test-stack)", alreadyDecided: false });
    const task = await stack.waitForTask(taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.map((s) => [s.id, s.status, s.output])).toEqual([["draft", "completed", "draft on tides"], ["publish", "completed", "published"]]);
    // Recorded as a tenant's decision: via the API, with an approval audit row.
    const { approvals } = await stack.client.approvals.list({ taskId });
    expect(approvals.map((a) => [a.id, a.stepId, a.decidedVia, a.decisionReason])).toEqual([[decision.approvalId, "publish", "api", "looks good"]]);
    const { rows } = await stack.client.audit.listRows({ taskId });
    expect(rows.filter((r) => r.action === "approval").map((r) => [r.stepId, r.verdict, r.actor])).toEqual([["publish", "approved", "alice (apikey:test-stack)"]]);
  });

  it("denies the named step's approval: the step fails closed and the task fails, nothing published", async () => {
    const taskId = await stack.startTask("publish", { topic: "secrets" });
    const decision = await stack.deny(taskId, "publish", { reason: "not today" });
    expect([decision.stepId, decision.status, decision.decidedBy]).toEqual(["publish", "denied", "apikey:test-stack"]);
    const task = await stack.waitForTask(taskId);
    expect(task.status).toBe("failed");
    const step = task.steps.find((s) => s.id === "publish")!;
    expect([step.status, step.error?.code, step.attempts]).toEqual(["failed", "POLICY_DENIED", 0]);
    expect(published).not.toContain("secrets");
  });

  it("waits for a step to settle (parked by default) or reach a status, and says when it never will", async () => {
    const taskId = await stack.startTask("publish", { topic: "waves" });
    const parked = await stack.waitForStep(taskId, "publish");
    expect([parked.status, parked.approvalId]).toEqual(["parked", expect.any(String)]);
    const draft = await stack.waitForStep(taskId, "draft", { status: "completed" });
    expect(draft.output).toBe("draft on waves");
    await stack.approve(taskId, "publish");
    expect((await stack.waitForStep(taskId, "publish", { status: ["completed", "failed"] })).status).toBe("completed");
    // Ended in another status: refused at once, not after stallMs.
    await expect(stack.waitForStep(taskId, "draft", { status: "parked", stallMs: 60_000 })).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      details: { reason: "STEP_STATUS_UNREACHABLE", stepStatus: "completed" },
      message: expect.stringMatching(/step draft is completed, and it will not change/),
    });
    // Stuck: fails once nothing moved, naming the stuck step.
    const stuck = await stack.startTask("nobody");
    await expect(stack.waitForStep(stuck, "lonely", { stallMs: 1_000 })).rejects.toThrow(/stuck waiting for step lonely of task .* to be completed or failed or cancelled or parked.*step lonely \(role:nobody-reads\) dispatched/s);
  });

  it("refuses to approve when no approval is pending (task ended, or nothing moves) or when several are", async () => {
    // A task that ended without ever parking: nothing pending, and nothing can come.
    const finished = await stack.startTask("publish", { topic: "ebb" });
    await stack.deny(finished, "publish");
    await stack.waitForTask(finished);
    await expect(stack.approve(finished)).rejects.toMatchObject({
      name: "SwitchyardError",
      code: "FAILED_PRECONDITION",
      details: { reason: "NO_PENDING_APPROVAL", taskId: finished, taskStatus: "failed" },
      message: expect.stringMatching(/^no pending approval for task .*: the task has ended: task .* is failed/),
    });
    // A task whose step never parks: refused once nothing moved for stallMs, saying what is stuck.
    const stuck = await stack.startTask("nobody");
    await expect(stack.approve(stuck, { stallMs: 1_000 })).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      details: { reason: "NO_PENDING_APPROVAL" },
      message: expect.stringMatching(/stuck waiting for an approval of task .* to be pending.*step lonely \(role:nobody-reads\) dispatched/s),
    });
    // Two parked steps: the step must be named.
    const twin = await stack.startTask("twin", { topic: "pair" });
    await stack.waitForStep(twin, "left", { status: "parked" });
    await stack.waitForStep(twin, "right", { status: "parked" });
    const several = await stack.approve(twin).catch((e: unknown) => e);
    expect(several).toMatchObject({ code: "FAILED_PRECONDITION", details: { reason: "SEVERAL_PENDING_APPROVALS" }, message: expect.stringMatching(/has 2 pending approvals, of steps (left|right) .*: name the step/) });
    expect((several as { details: { pending: Array<{ stepId: string }> } }).details.pending.map((p) => p.stepId).sort()).toEqual(["left", "right"]);
    await stack.approve(twin, "left");
    // Denying `right` fails the task, which would cancel `left` were it still running: let it finish first.
    await stack.waitForStep(twin, "left", { status: "completed" });
    await stack.deny(twin, "right");
    const task = await stack.waitForTask(twin);
    expect([task.status, task.steps.map((s) => [s.id, s.status])]).toEqual(["failed", [["left", "completed"], ["right", "failed"]]]);
  });

  it("gives a switchyard/client for the stack's tenant: submit, start and read back through the API", async () => {
    const submitted = await stack.client.workflows.submit({ source: "name: echo\nsteps:\n  - { id: a, to: role:echo }\n" });
    expect(submitted.ref).toBe("echo@1");
    stack.register("role:echo", (work: { input: { task: unknown } }) => ({ echoed: work.input.task }));
    const started = await stack.client.tasks.start({ workflow: "echo", input: toValue({ n: 1 }) });
    expect(started.task?.status).toBe(TaskStatus.RUNNING);
    const taskId = started.task!.id;
    const finished = await stack.waitForTask(taskId);
    expect([finished.status, finished.orgId]).toEqual(["completed", "press"]);
    const { task } = await stack.client.tasks.get({ id: taskId });
    expect([task?.workflow, task?.status, fromValue(task?.input), fromValue(task?.steps[0]?.output)]).toEqual(["echo@1", TaskStatus.COMPLETED, { n: 1 }, { echoed: { n: 1 } }]);
    // A task the stack started is the tenant's too.
    const other = await stack.runTask("echo", "two");
    const { tasks } = await stack.client.tasks.list({});
    expect(tasks.map((t) => t.id)).toEqual(expect.arrayContaining([taskId, other.id]));
  });

  it("keeps the internals off the public surface; the repo's tests reach them through testStackInternals", () => {
    expect(Object.keys(stack).sort()).toEqual(
      ["approve", "client", "close", "config", "databaseUrl", "deny", "keyPrefix", "orgId", "register", "runTask", "startTask", "submitWorkflow", "waitForStep", "waitForTask"],
    );
    expect(Object.keys(testing)).not.toContain("testStackInternals");
    expect(typeof testStackInternals(stack).runtime.pool.query).toBe("function");
    expect(() => testStackInternals({ ...stack })).toThrow(/not a stack made by createTestStack/);
  });
});
