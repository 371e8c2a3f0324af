/**
 * FOREIGN re-send rules beyond timeouts. A hop the agent FAILED is, like a timed-out one, re-sent only to an agent
 * registered `idempotent`; otherwise the step fails closed as FOREIGN_NOT_RETRIED, audited with the agent's own
 * error and listed with the foreign dead letters. A send that failed before any request left (here: the agent's
 * card is unreachable, connection refused) opened nothing at the agent, so the step's retries re-send it whatever
 * the agent's registration. Agents are real A2A servers on loopback.
 */
import { createServer, type AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { listForeignDeadLetters } from "../../../src/foreign/dead-letters.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { createForeignRuntime, type ForeignTestRuntime } from "./support.js";

const ORG = "acme";
const RETRIED = `
name: retried
steps:
  - { id: b, to: "foreign:helper", timeout: 10s, retries: 2, backoff: 10ms }
`;

describe("FOREIGN re-sends after a failure", () => {
  let rt: ForeignTestRuntime;
  let helper: RunningA2AAgent | undefined;

  beforeEach(async () => {
    rt = await createForeignRuntime();
    await rt.submit(ORG, RETRIED);
    rt.startCoordinator();
  });
  afterEach(async () => {
    await helper?.close();
    helper = undefined;
    await rt.cleanup();
  });

  const tasksOpenedFor = (agent: RunningA2AAgent, taskId: string) =>
    agent.received.filter((r) => (r.metadata as { switchyard?: { taskId?: string } })?.switchyard?.taskId === taskId).length;

  it("does not re-send a failed hop to an agent that is not idempotent: FOREIGN_NOT_RETRIED, audited, dead-lettered", async () => {
    helper = await startA2AAgent({ dialect: "1.0", behaviour: "fail" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "retried" });
    const task = await rt.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "failed", error: { code: "FOREIGN_NOT_RETRIED", stepId: "b" } });
    expect(task.error!.message).toContain("FOREIGN_FAILED: foreign agent helper failed the task");
    expect(task.error!.message).toContain("the test agent was told to fail");
    expect(task.steps[0]).toMatchObject({ status: "failed", attempts: 1 });
    expect(tasksOpenedFor(helper, taskId)).toBe(1);
    const bridges = await listBridges(rt.pool, ORG, taskId);
    expect(bridges).toHaveLength(1);

    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "result:failed"]);
    expect(audit[1]!.reason).toMatch(/^FOREIGN_FAILED: /);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
    expect(await listForeignDeadLetters(rt.stores.bridges, rt.pool, { limit: 10 })).toEqual([
      expect.objectContaining({ stream: "foreign:helper", id: bridges[0]!.id, reason: expect.stringMatching(/^FOREIGN_NOT_RETRIED: foreign agent helper failed \(FOREIGN_FAILED: /) }),
    ]);
  });

  it("re-sends a failed hop to an agent registered idempotent, under the step's retries", async () => {
    helper = await startA2AAgent({ dialect: "1.0", behaviour: "fail" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, idempotent: true });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "retried" });
    const task = await rt.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "failed", error: { code: "FOREIGN_FAILED" } });
    expect(task.steps[0]).toMatchObject({ attempts: 3 });
    expect(tasksOpenedFor(helper, taskId)).toBe(3);
    expect(await listForeignDeadLetters(rt.stores.bridges, rt.pool, { limit: 10 })).toEqual([]);
  });

  it("re-sends, under the step's retries, a hop whose send failed before anything reached the agent", async () => {
    // A loopback port where nothing listens: every card fetch is refused before a request is written.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    await rt.register(ORG, { agentKey: "helper", baseUrl: `http://127.0.0.1:${port}` });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "retried" });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("failed");
    expect(["FOREIGN_SEND_FAILED", "FOREIGN_BREAKER_OPEN"]).toContain(task.error!.code);
    expect(task.steps[0]).toMatchObject({ status: "failed", attempts: 3 });
    const bridges = await listBridges(rt.pool, ORG, taskId);
    expect(bridges.map((b) => [b.attempt, b.status])).toEqual([[1, "send_failed"], [2, "send_failed"], [3, "send_failed"]]);
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "result:failed", "a2a_egress:allow", "result:failed", "a2a_egress:allow", "result:failed"]);
    // Nothing was ever sent, so nothing was given up on at the agent: no foreign dead letter.
    expect(await listForeignDeadLetters(rt.stores.bridges, rt.pool, { limit: 10 })).toEqual([]);
  });
});
