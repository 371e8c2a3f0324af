/**
 * CancelTask on a timed-out FOREIGN hop is audited on its own row (issue 10 §1): after the engine's `timeout` row,
 * the sweep closes the bridge, sends CancelTask and appends `foreign_cancel` (verdict `sent`, or `failed` with the
 * error) to the tenant's chain, which still verifies. The agent is a real A2A server that never finishes.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { waitFor } from "../../support/runtime.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";
const HUNG = `
name: hung
steps:
  - { id: b, to: "foreign:helper", timeout: 1s }
`;

describe("CancelTask audited", () => {
  let rt: ForeignTestRuntime;
  let helper: RunningA2AAgent;

  beforeEach(async () => {
    rt = await createForeignRuntime();
    helper = await startA2AAgent({ dialect: "1.0", behaviour: "never-finish" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl });
    await rt.submit(ORG, HUNG);
    rt.startCoordinator();
  });
  afterEach(async () => {
    await helper.close();
    await rt.cleanup();
  });

  const auditOf = async (taskId: string, count: number) =>
    waitFor(async () => {
      const rows = await listAudit(rt.pool, ORG, { taskId });
      return rows.length >= count ? rows : undefined;
    }, { what: `${count} audit rows for the task` });

  it("a sent CancelTask: the timeout row, then ONE foreign_cancel row naming the hop; the chain verifies; the agent cancelled", async () => {
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "hung" });
    expect(await rt.finished(ORG, taskId)).toMatchObject({ status: "failed", error: { code: "TIMEOUT" } });
    const rows = await auditOf(taskId, 3);
    expect(rows.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "timeout:failed", "foreign_cancel:sent"]);
    const [bridge] = await listBridges(rt.pool, ORG, taskId);
    expect(bridge).toMatchObject({ status: "timed_out" });
    expect(rows[2]).toMatchObject({
      actor: "coordinator",
      destination: "foreign:helper",
      rule: "builtin:timeout",
      taskId,
      stepId: "b",
      envelopeId: bridge!.id,
      cost: 0,
    });
    expect(rows[2]!.reason).toContain(bridge!.foreignTaskId!);
    expect(rows[2]!.seq).toBeGreaterThan(rows[1]!.seq);
    expect(await verifyChain(rt.stores.audit, rt.pool, ORG)).toMatchObject({ ok: true });
    // The agent really got the cancel: it reports its task canceled.
    await waitFor(async () => helper.pushes.some((p) => JSON.stringify(p.body).includes("CANCELED")), { what: "the agent to cancel" });
    // Exactly one row, however many sweep passes run after.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await listAudit(rt.pool, ORG, { taskId })).filter((a) => a.action === "foreign_cancel")).toHaveLength(1);
  });

  it("a CancelTask that cannot reach the agent is audited failed, with the error", async () => {
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "hung" });
    await waitFor(async () => helper.received.length > 0, { what: "the agent to receive the step" });
    await helper.close();
    expect(await rt.finished(ORG, taskId)).toMatchObject({ status: "failed", error: { code: "TIMEOUT" } });
    const rows = await auditOf(taskId, 3);
    expect(rows.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "timeout:failed", "foreign_cancel:failed"]);
    expect(rows[2]!.reason).toMatch(/CancelTask for foreign task .+ failed: /);
    expect(await verifyChain(rt.stores.audit, rt.pool, ORG)).toMatchObject({ ok: true });
  });
});
