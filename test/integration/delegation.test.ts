/**
 * Delegation (seed 000) end to end: QUERY governed as sub_query, REPLY with a reference (not the result), the
 * origin resuming through its own read scope, the depth ceiling, and failures reported back.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { putPolicy } from "../../src/governance/policy-store.js";
import { MAX_DELEGATION_DEPTH } from "../../src/core/model.js";
import researcher from "../../examples/handlers/researcher.js";
import analyst from "../../examples/handlers/analyst.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";

const ORG = "acme";

describe("delegation", () => {
  let rt: TestRuntime;
  let workers: Workers;
  beforeEach(async () => {
    rt = await createTestRuntime({ coordinator: { defaultStepTimeoutMs: 3000 } });
    workers = new Workers(rt);
    rt.startCoordinator();
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  async function finished(taskId: string) {
    return waitForTask(rt.tasks, ORG, taskId);
  }

  it("suspends the origin, governs the sub-query, and resumes it with a reference to the delegate's result", async () => {
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(`
name: research
steps:
  - { id: research, to: "role:researcher", cost_estimate: 1 }
`));
    workers.start("researcher", researcher);
    workers.start("analyst", analyst);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "research", input: { topic: "tides" } });
    const task = await finished(taskId);
    expect(task.status).toBe("completed");
    const research = task.steps.find((s) => s.id === "research")!;
    const delegate = task.steps.find((s) => s.id === "research.d1")!;
    expect(delegate).toMatchObject({ kind: "delegation", status: "completed", destination: "role:analyst" });
    expect((research.output as { analysis: unknown }).analysis).toEqual(delegate.output);
    // 0.2 before delegating + 0.5 for the analyst + 0.3 after resuming
    expect(task.cost).toBeCloseTo(1.0);
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.map((a) => `${a.action}:${a.stepId}`)).toEqual([
      "dispatch:research", "query:research", "sub_query:research.d1", "result:research.d1", "reply:research", "result:research",
    ]);
    // The REPLY is an envelope on the origin's stream whose payload does not contain the analyst's output.
    expect(JSON.stringify(audit)).not.toContain(JSON.stringify(delegate.output));
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("reports a failed delegate back to the origin, which decides what to do", async () => {
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(`
name: research
steps:
  - { id: research, to: "role:researcher" }
`));
    workers.start("researcher", researcher);
    workers.start("analyst", async () => {
      throw new Error("analysis engine down");
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "research", input: { topic: "tides" } });
    const task = await finished(taskId);
    expect(task.status).toBe("failed");
    expect(task.error!.message).toContain("the analyst failed: HANDLER_FAILED analysis engine down");
    const actions = (await listAudit(rt.pool, ORG, { taskId })).map((a) => `${a.action}:${a.verdict}`);
    expect(actions).toContain("reply:allow");
  });

  it("a denied sub-query is reported back to the origin as an error REPLY", async () => {
    await putPolicy(rt.stores.policies, rt.pool, ORG, { rules: [{ id: "no-analysts", action: "sub_query", destination: "role:analyst", verdict: "deny", reason: "analysts are busy" }] });
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(`
name: research
steps:
  - { id: research, to: "role:researcher" }
`));
    workers.start("researcher", researcher);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "research", input: { topic: "tides" } });
    const task = await finished(taskId);
    expect(task.status).toBe("failed");
    expect(task.error!.message).toContain("POLICY_DENIED");
    expect(task.steps.find((s) => s.id === "research.d1")!.error).toMatchObject({ code: "POLICY_DENIED" });
  });

  it(`delivers no REPLY at depth >= ${MAX_DELEGATION_DEPTH}; the work past it runs, is recorded, and may not delegate again`, async () => {
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(`
name: deep
steps:
  - { id: s, to: "role:loop", timeout: 30s }
`));
    // An unbounded recursive handler: it delegates to itself whenever it is not resumed.
    workers.start("loop", async (work, ctx) => {
      if (work.resume) return { depth: work.depth, resumed: true };
      return ctx.delegate("role:loop", { depth: work.depth }, { state: { depth: work.depth } });
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "deep" });
    // The work past the ceiling (depth 9, asked at query depth 8) ran; its own sub-query was refused, so it failed
    // DELEGATION_DEPTH with an audited denial, and nothing deeper was ever created.
    const deepest = await waitFor(async () => {
      const { rows } = await rt.pool.query("SELECT step_id, status, error FROM steps WHERE task_id = $1 AND depth = $2", [taskId, MAX_DELEGATION_DEPTH + 1]);
      return rows[0]?.status === "failed" ? rows[0] : undefined;
    });
    expect(deepest.error).toMatchObject({ code: "DELEGATION_DEPTH" });
    const { rows: denied } = await rt.pool.query("SELECT rule FROM audit_log WHERE task_id = $1 AND step_id = $2 AND action = 'query' AND verdict = 'denied'", [taskId, deepest.step_id]);
    expect(denied).toEqual([{ rule: "builtin:delegation-depth" }]);
    const counted = await waitFor(async () => {
      const metric = await rt.metrics.delegationDepthExceeded.get();
      return (metric.values[0]?.value ?? 0) >= 1 ? metric.values[0]!.value : undefined;
    });
    expect(counted).toBeGreaterThanOrEqual(1);
    // No REPLY crosses the ceiling: the origin at depth 8 times out instead, and its failure is reported below the
    // ceiling, so the task still finishes.
    const task = await waitForTask(rt.tasks, ORG, taskId, { until: (t) => t.status === "completed" });
    expect(task.steps.find((s) => s.id === "s")!.status).toBe("completed");
    const { rows: depth } = await rt.pool.query("SELECT max(depth) AS max FROM steps WHERE task_id = $1", [taskId]);
    expect(depth[0].max).toBe(MAX_DELEGATION_DEPTH + 1);
    const { rows: replies } = await rt.pool.query("SELECT step_id FROM audit_log WHERE task_id = $1 AND action = 'reply' AND verdict <> 'orphaned'", [taskId]);
    const { rows: delegates } = await rt.pool.query("SELECT step_id, delegation FROM steps WHERE task_id = $1 AND kind = 'delegation'", [taskId]);
    const pastCeiling = delegates.filter((r) => r.delegation.queryDepth >= MAX_DELEGATION_DEPTH).map((r) => r.delegation.originStepId);
    expect(pastCeiling).toHaveLength(1);
    for (const origin of pastCeiling) expect(replies.map((r) => r.step_id)).not.toContain(origin);
  });
});
