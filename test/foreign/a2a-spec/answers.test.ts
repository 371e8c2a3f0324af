/**
 * A2A results per the spec, from the SendMessage answer: an agent that finished before answering (a completed Task)
 * and one that answers with a Message resume the step at once from the answer — with a step timeout far shorter than
 * the sweep (60 s here), so nothing but the answer can have resumed it — exactly once, and nothing is cancelled.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";

describe("A2A SendMessage answers", () => {
  let rt: ForeignTestRuntime;
  let agents: RunningA2AAgent[];

  beforeEach(async () => {
    rt = await createForeignRuntime();
    agents = [];
    rt.startCoordinator();
  });
  afterEach(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await rt.cleanup();
  });

  async function run(options: Parameters<typeof startA2AAgent>[0]) {
    const agent = await startA2AAgent(options);
    agents.push(agent);
    await rt.register(ORG, { agentKey: "helper", baseUrl: agent.baseUrl });
    await rt.submit(ORG, `
name: one
steps:
  - { id: b, to: "foreign:helper", timeout: 3s }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one", input: { q: 1 } });
    const started = Date.now();
    const task = await rt.finished(ORG, taskId);
    return { agent, taskId, task, elapsedMs: Date.now() - started };
  }

  for (const dialect of ["1.0", "0.3"] as const) {
    it(`v${dialect}: a Task already completed in the answer resumes the step at once with its artifacts; no CancelTask`, async () => {
      const { agent, taskId, task, elapsedMs } = await run({ dialect, behaviour: "blocking-complete", name: "blocker" });
      expect(task).toMatchObject({ status: "completed", steps: [{ status: "completed", output: { echo: { task: { q: 1 }, steps: {} }, by: "blocker" } }] });
      expect(elapsedMs).toBeLessThan(2_500);
      const [bridge] = await listBridges(rt.pool, ORG, taskId);
      expect(bridge).toMatchObject({ status: "completed", lastState: "completed", foreignTaskId: agent.received[0]!.taskId, delivery: "push", nextPollAt: null });
      // Exactly once: one egress row, one completion; the agent was never asked about or told to cancel the task.
      const audit = await listAudit(rt.pool, ORG, { taskId });
      expect(audit.filter((a) => a.action === "a2a_egress")).toHaveLength(1);
      await new Promise((r) => setTimeout(r, 500));
      expect(agent.calls).toEqual([]);
    });

    it(`v${dialect}: a Message answer completes the step with the message's parts as its output`, async () => {
      const { agent, taskId, task } = await run({ dialect, behaviour: "message-reply", output: (input) => ({ replied: input }) });
      expect(task).toMatchObject({ status: "completed", steps: [{ status: "completed", output: { replied: { task: { q: 1 }, steps: {} } } }] });
      const [bridge] = await listBridges(rt.pool, ORG, taskId);
      expect(bridge!.status).toBe("completed");
      // No task at the agent: the bridge names the message, and nothing is ever polled or cancelled.
      expect(bridge!.foreignTaskId).toMatch(/^message:/);
      expect(bridge!.artifacts).toEqual([{ artifactId: "message", parts: [{ replied: { task: { q: 1 }, steps: {} } }] }]);
      await new Promise((r) => setTimeout(r, 500));
      expect(agent.calls).toEqual([]);
    });
  }

  for (const dialect of ["1.0", "0.3"] as const) {
    it(`v${dialect}: a completed Task whose answer is only in status.message completes the step with that message`, async () => {
      const { task } = await run({ dialect, behaviour: "status-message-only", output: () => ({ answer: 42 }) });
      expect(task).toMatchObject({
        status: "completed",
        steps: [{ status: "completed", output: { artifacts: [{ artifactId: "status-message", parts: ["done", { answer: 42 }] }] } }],
      });
    });

    it(`v${dialect}: a completed Task with no artifact and no status message fails closed (FOREIGN_NO_OUTPUT), never an empty success`, async () => {
      const { task } = await run({ dialect, behaviour: "empty-complete" });
      expect(task.status).toBe("failed");
      expect(task.steps[0]).toMatchObject({ status: "failed", error: { code: "FOREIGN_NO_OUTPUT" } });
    });
  }

  it("an answer nested 500 levels fails the hop closed, and the task stays readable", async () => {
    let deep: unknown = { leaf: true };
    for (let i = 0; i < 500; i++) deep = { d: deep };
    const { taskId, task } = await run({ dialect: "1.0", behaviour: "blocking-complete", output: () => deep });
    expect(task.status).toBe("failed");
    expect(task.steps[0]!.error?.message).toMatch(/deeper than 64 levels/);
    expect(JSON.stringify(await rt.tasks.get(ORG, taskId)).length).toBeLessThan(100_000);
  });
});
