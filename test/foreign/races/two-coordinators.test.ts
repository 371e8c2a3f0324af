/**
 * FOREIGN hops with two coordinator runtimes on one database and one bus, as `deploy/` runs them: each runs its own
 * sender, poller and sweep over the shared bridges. Pushed and polled agents side by side in a fan-out/fan-in
 * workflow; every step resumes exactly once, every agent is asked once per step, and the chain verifies.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Coordinator } from "../../../src/coordinator/coordinator.js";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { createRuntime, type Runtime } from "../../../src/runtime.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { waitForTasks } from "../../support/wait.js";
import { coordinatorOf, createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";
const TASKS = 12;

describe("FOREIGN with two coordinators", () => {
  let rt: ForeignTestRuntime | undefined;
  let second: Runtime | undefined;
  let secondCoordinator: Coordinator | undefined;
  const agents: RunningA2AAgent[] = [];

  afterEach(async () => {
    await secondCoordinator?.close();
    await second?.close();
    await Promise.all(agents.splice(0).map((a) => a.close()));
    await rt?.cleanup();
    rt = second = secondCoordinator = undefined;
  });

  it("pushed and polled hops resume exactly once each, with every agent asked once per step", async () => {
    rt = await createForeignRuntime({ pollBaseMs: 50, pollMaxMs: 400 });
    const pushed = await startA2AAgent({ dialect: "1.0" });
    const polled = await startA2AAgent({ dialect: "0.3", push: false });
    agents.push(pushed, polled);
    await rt.register(ORG, { agentKey: "pushed", baseUrl: pushed.baseUrl });
    await rt.register(ORG, { agentKey: "polled", baseUrl: polled.baseUrl });
    await rt.submit(ORG, `
name: both
steps:
  - { id: a, to: "foreign:pushed", timeout: 30s }
  - { id: b, to: "foreign:polled", timeout: 30s }
`);
    // A second process: its own runtime (pool, bus connections, sender, poller, sweep) on the same database and bus.
    second = await createRuntime(rt.config);
    secondCoordinator = coordinatorOf(second, "second");
    void secondCoordinator.start();
    rt.startCoordinator();

    const taskIds: string[] = [];
    for (let i = 0; i < TASKS; i++) taskIds.push((await rt.tasks.start({ orgId: ORG, workflow: "both", input: { n: i } })).taskId);
    const state = await waitForTasks(rt.pool, { orgId: ORG, expected: TASKS });
    expect(state.tasks.completed).toBe(TASKS);

    for (const taskId of taskIds) {
      const task = await rt.tasks.get(ORG, taskId);
      expect(task.status, `task ${taskId}`).toBe("completed");
      const bridges = await listBridges(rt.pool, ORG, taskId);
      expect(bridges.map((b) => `${b.stepId}:${b.status}:${b.delivery}`).sort()).toEqual(["a:completed:push", "b:completed:poll"]);
      const results = (await listAudit(rt.pool, ORG, { taskId })).filter((row) => row.action === "result");
      expect(results.map((row) => row.stepId).sort(), `one result row per step of ${taskId}`).toEqual(["a", "b"]);
    }
    // Each agent was asked once per task: no bridge was sent by both coordinators.
    const askedFor = (agent: RunningA2AAgent) => agent.received.map((m) => (m.metadata as { switchyard?: { taskId?: string } }).switchyard?.taskId).sort();
    expect(askedFor(pushed)).toEqual([...taskIds].sort());
    expect(askedFor(polled)).toEqual([...taskIds].sort());
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });
});
