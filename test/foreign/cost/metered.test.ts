/**
 * Metered foreign cost end to end, against real A2A agents on loopback: reported usage prices the hop
 * (`reported_usage`), otherwise the registry's estimate plus elapsed time × its rate (`estimate_plus_elapsed`);
 * the step, the audit row and the bridge agree, and the budget sees the real figure.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";

const ONE_HOP = `
name: metered
steps:
  - { id: b, to: "foreign:helper", cost_estimate: 1 }
`;

describe("metered foreign cost", () => {
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

  async function agent(options: Parameters<typeof startA2AAgent>[0]): Promise<RunningA2AAgent> {
    const started = await startA2AAgent(options);
    agents.push(started);
    return started;
  }

  async function resultRow(taskId: string, stepId = "b") {
    const audit = await listAudit(rt.pool, ORG, { taskId });
    const row = audit.find((a) => a.action === "result" && a.stepId === stepId);
    expect(row, "the step's result audit row").toBeDefined();
    return row!;
  }

  for (const dialect of ["1.0", "0.3"] as const) {
    it(`prices the hop by the usage a v${dialect} agent reports in metadata`, async () => {
      const helper = await agent({ dialect, finalMetadata: { usage: { cost: 0.42, inputTokens: 120, outputTokens: 30 } } });
      await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, costEstimate: 5, costPerSecond: 100 });
      await rt.submit(ORG, ONE_HOP);
      const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "metered", input: { q: 1 } });
      const task = await rt.finished(ORG, taskId);
      expect(task.status).toBe("completed");
      expect(task.steps.find((s) => s.id === "b")).toMatchObject({ status: "completed", cost: 0.42 });
      expect(task.cost).toBe(0.42);

      const row = await resultRow(taskId);
      expect(row).toMatchObject({ actor: "foreign:helper", verdict: "accepted", cost: 0.42 });
      expect(row.reason).toBe("step attempt completed (cost 0.42 priced by reported_usage)");
      const [bridge] = await listBridges(rt.pool, ORG, taskId);
      expect(bridge).toMatchObject({ status: "completed", pricedBy: "reported_usage", usage: { cost: 0.42, inputTokens: 120, outputTokens: 30 } });
      expect(bridge!.sentAt).toBeInstanceOf(Date);
      expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
    });
  }

  it("prices a hop without reported usage as estimate + elapsed seconds x rate", async () => {
    const delay = 400;
    // submitted, then three pauses before working, the artifact and completed: at least 2 of them follow the send.
    const helper = await agent({ dialect: "1.0", pushDelays: delay });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, costEstimate: 0.5, costPerSecond: 2 });
    await rt.submit(ORG, ONE_HOP);
    const started = Date.now();
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "metered", input: { q: 1 } });
    const task = await rt.finished(ORG, taskId);
    const wallSeconds = (Date.now() - started) / 1000;
    expect(task.status).toBe("completed");

    const cost = task.steps.find((s) => s.id === "b")!.cost;
    // Lower bound from the agent's own pauses after the send was recorded; upper bound: the whole task's wall time.
    expect(cost).toBeGreaterThanOrEqual(0.5 + ((2 * delay) / 1000) * 2);
    expect(cost).toBeLessThanOrEqual(0.5 + wallSeconds * 2 + 0.01);
    const row = await resultRow(taskId);
    expect(row.cost).toBe(cost);
    expect(row.reason).toBe(`step attempt completed (cost ${cost} priced by estimate_plus_elapsed)`);
    const [bridge] = await listBridges(rt.pool, ORG, taskId);
    expect(bridge).toMatchObject({ pricedBy: "estimate_plus_elapsed", usage: null });
    const elapsedMs = bridge!.resolvedAt!.getTime() - bridge!.sentAt!.getTime();
    expect(cost).toBeCloseTo(0.5 + (elapsedMs / 1000) * 2, 0);
  });

  it("ignores malformed usage (negative, string, huge) and prices by the estimate; tokens alone are recorded", async () => {
    const cases: Array<{ metadata: Record<string, unknown>; usage: unknown }> = [
      { metadata: { usage: { cost: -3 } }, usage: null },
      { metadata: { usage: { cost: "12", inputTokens: 50, outputTokens: -1 } }, usage: { inputTokens: 50 } },
      { metadata: { usage: { cost: 1e12 } }, usage: null },
    ];
    for (const [i, c] of cases.entries()) {
      const helper = await agent({ dialect: "1.0", finalMetadata: c.metadata, name: `odd-${i}` });
      await rt.register(ORG, { agentKey: `helper${i}`, baseUrl: helper.baseUrl, costEstimate: 0.5 });
      await rt.submit(ORG, `
name: odd${i}
steps:
  - { id: b, to: "foreign:helper${i}", cost_estimate: 1 }
`);
      const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: `odd${i}`, input: { q: i } });
      const task = await rt.finished(ORG, taskId);
      expect(task.status, JSON.stringify(c.metadata)).toBe("completed");
      expect(task.steps.find((s) => s.id === "b")!.cost).toBe(0.5);
      expect((await resultRow(taskId)).reason).toBe("step attempt completed (cost 0.5 priced by estimate_plus_elapsed)");
      const [bridge] = await listBridges(rt.pool, ORG, taskId);
      expect(bridge).toMatchObject({ pricedBy: "estimate_plus_elapsed", usage: c.usage });
    }
  });

  it("lets the budget see a reported cost: a later hop over the task budget is denied", async () => {
    const helper = await agent({ dialect: "1.0", finalMetadata: { usage: { cost: 50 } } });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, costEstimate: 1 });
    await rt.submit(ORG, `
name: budgeted
budget: 10
steps:
  - { id: b, to: "foreign:helper", cost_estimate: 1 }
  - { id: c, to: "role:finish", cost_estimate: 1 }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "budgeted", input: { q: 1 } });
    const task = await rt.finished(ORG, taskId);
    expect(task.cost).toBe(50);
    expect(task.steps.find((s) => s.id === "b")).toMatchObject({ status: "completed", cost: 50 });
    expect(task.steps.find((s) => s.id === "c")).toMatchObject({ status: "failed", error: { code: "BUDGET_EXCEEDED" } });
    expect(task.status).toBe("failed");
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.find((a) => a.stepId === "c")).toMatchObject({ verdict: "deny", rule: "builtin:budget" });
  });

  it("charges nothing for a send that failed (no priced_by)", async () => {
    const helper = await agent({ dialect: "1.0" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, costEstimate: 3, costPerSecond: 10 });
    await helper.close();
    await rt.submit(ORG, ONE_HOP);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "metered", input: { q: 1 } });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("failed");
    expect(task.steps.find((s) => s.id === "b")!.cost).toBe(0);
    const row = await resultRow(taskId);
    expect(row.cost).toBe(0);
    expect(row.reason).not.toMatch(/priced by/);
    expect((await listBridges(rt.pool, ORG, taskId))[0]).toMatchObject({ status: "send_failed", pricedBy: null });
  });
});
