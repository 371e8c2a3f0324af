/**
 * A FOREIGN hop that times out is re-sent (a new task at the agent) only when the tenant registered the agent
 * `idempotent`; otherwise the step fails closed (FOREIGN_NOT_RETRIED), audited, and the hop is listed with the dead
 * letters. The agent here is a real A2A server that never finishes its tasks.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { listForeignDeadLetters, refuseForeignReplay } from "../../../src/foreign/dead-letters.js";
import { getForeignAgent, updateForeignAgent } from "../../../src/foreign/registry.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { waitFor } from "../../support/runtime.js";
import { createForeignRuntime, type ForeignTestRuntime } from "./support.js";

const ORG = "acme";
const HUNG = `
name: hung
steps:
  - { id: b, to: "foreign:helper", timeout: 1s, retries: 2, backoff: 10ms }
`;

describe("FOREIGN retries", () => {
  let rt: ForeignTestRuntime;
  let helper: RunningA2AAgent;

  beforeEach(async () => {
    rt = await createForeignRuntime();
    helper = await startA2AAgent({ dialect: "1.0", behaviour: "never-finish" });
    await rt.submit(ORG, HUNG);
    rt.startCoordinator();
  });
  afterEach(async () => {
    await helper.close();
    await rt.cleanup();
  });

  const tasksOpenedFor = (taskId: string) =>
    helper.received.filter((r) => (r.metadata as { switchyard?: { taskId?: string } })?.switchyard?.taskId === taskId).length;

  it("opens ONE task at an agent that is not idempotent, and fails the step closed, audited, dead-lettered", async () => {
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl });
    expect((await getForeignAgent(rt.stores.foreignAgents, rt.pool, ORG, "helper")).idempotent).toBe(false);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "hung" });
    const task = await rt.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "failed", error: { code: "FOREIGN_NOT_RETRIED", stepId: "b" } });
    expect(task.error!.message).toMatch(/not registered idempotent/);
    expect(task.steps[0]).toMatchObject({ status: "failed", attempts: 1 });
    // The step is terminal at attempt 1: nothing can dispatch it again. One task, one bridge.
    expect(tasksOpenedFor(taskId)).toBe(1);
    expect(await listBridges(rt.pool, ORG, taskId)).toHaveLength(1);

    // The sweep's CancelTask is audited on its own row (`foreign_cancel`), possibly already: checked below.
    const audit = (await listAudit(rt.pool, ORG, { taskId })).filter((a) => a.action !== "foreign_cancel");
    expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "timeout:failed"]);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);

    // The one task at the agent is closed on our side and cancelled at the agent (best effort, as for any timeout).
    const bridge = await waitFor(async () => {
      const [b] = await listBridges(rt.pool, ORG, taskId);
      return b?.status === "timed_out" ? b : undefined;
    }, { what: "the bridge to be closed" });
    await waitFor(async () => helper.pushes.some((p) => JSON.stringify(p.body).includes("CANCELED")), { what: "the agent to cancel its task" });
    await waitFor(async () => (await listAudit(rt.pool, ORG, { taskId })).some((a) => a.action === "foreign_cancel"), { what: "the cancel to be audited" });
    expect(tasksOpenedFor(taskId)).toBe(1);
    const letters = await listForeignDeadLetters(rt.stores.bridges, rt.pool, { limit: 10 });
    expect(letters).toEqual([
      expect.objectContaining({
        stream: "foreign:helper",
        id: bridge!.id,
        deliveries: 1,
        reason: expect.stringMatching(/^FOREIGN_NOT_RETRIED: foreign agent helper gave no result/),
        envelope: { id: bridge!.id, kind: "WORK", orgId: ORG, taskId, stepId: "b" },
      }),
    ]);
    expect(await listForeignDeadLetters(rt.stores.bridges, rt.pool, { stream: "foreign:other", limit: 10 })).toEqual([]);
    expect(() => refuseForeignReplay("foreign:helper")).toThrow(/never replayed/);
  });

  it("re-sends to an agent registered idempotent, under the step's retries", async () => {
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, idempotent: true });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "hung" });
    const task = await rt.finished(ORG, taskId, 30_000);
    expect(task).toMatchObject({ status: "failed", error: { code: "TIMEOUT" } });
    expect(task.steps[0]).toMatchObject({ attempts: 3 });
    expect(tasksOpenedFor(taskId)).toBe(3);
    // Each timed-out attempt's CancelTask is audited too (`foreign_cancel`), whenever the sweep gets to it.
    const audit = (await listAudit(rt.pool, ORG, { taskId })).filter((a) => a.action !== "foreign_cancel");
    expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual([
      "a2a_egress:allow", "timeout:failed", "a2a_egress:allow", "timeout:failed", "a2a_egress:allow", "timeout:failed",
    ]);
    expect(await listForeignDeadLetters(rt.stores.bridges, rt.pool, { limit: 10 })).toEqual([]);
  });

  it("reads the flag at decision time: switching idempotent off stops the next re-send", async () => {
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, idempotent: true });
    await updateForeignAgent(rt.stores.foreignAgents, rt.pool, ORG, "helper", { idempotent: false });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "hung" });
    const task = await rt.finished(ORG, taskId);
    expect(task.error).toMatchObject({ code: "FOREIGN_NOT_RETRIED" });
    expect(tasksOpenedFor(taskId)).toBe(1);
  });
});
