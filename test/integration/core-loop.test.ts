/**
 * The governed core loop end to end: coordinator + real harnesses on real Redis and Postgres.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { putPolicy } from "../../src/governance/policy-store.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { listApprovals } from "../../src/store/approvals/postgres-approval-store.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";

const ORG = "acme";

async function submit(rt: TestRuntime, yaml: string) {
  return submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(yaml));
}

async function finished(rt: TestRuntime, taskId: string) {
  return waitForTask(rt.tasks, ORG, taskId);
}

describe("core loop", () => {
  let rt: TestRuntime;
  let workers: Workers;
  beforeEach(async () => {
    rt = await createTestRuntime();
    workers = new Workers(rt);
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  it("runs a three-step workflow with every hop governed, audited and costed", async () => {
    await submit(rt, `
name: three
steps:
  - { id: one, to: "role:echo", cost_estimate: 1 }
  - { id: two, to: "role:echo", cost_estimate: 1 }
  - { id: three, to: "role:echo", cost_estimate: 1 }
`);
    rt.startCoordinator();
    workers.start("echo", async (work, ctx) => {
      ctx.usage({ cost: 0.25 });
      return { step: work.stepId, saw: Object.keys((work.input as { steps: object }).steps) };
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "three", input: { n: 1 } });
    const task = await finished(rt, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.map((s) => [s.id, s.status, s.attempts, s.cost])).toEqual([
      ["one", "completed", 1, 0.25],
      ["two", "completed", 1, 0.25],
      ["three", "completed", 1, 0.25],
    ]);
    expect(task.steps[1]!.output).toEqual({ step: "two", saw: ["one"] });
    expect(task.cost).toBeCloseTo(0.75);
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.map((a) => `${a.action}:${a.stepId}:${a.verdict}`)).toEqual([
      "dispatch:one:allow", "result:one:accepted", "dispatch:two:allow", "result:two:accepted", "dispatch:three:allow", "result:three:accepted",
    ]);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
    expect(await rt.pool.query("SELECT count(*)::int AS n FROM outbox").then((r) => r.rows[0].n)).toBe(0);
  });

  it("parks a step for approval and resumes exactly once however often it is decided", async () => {
    await submit(rt, `
name: gated
steps:
  - { id: draft, to: "role:echo" }
  - { id: publish, to: "role:echo", approval: true }
`);
    rt.startCoordinator();
    let publishRuns = 0;
    workers.start("echo", async (work) => {
      if (work.stepId === "publish") publishRuns++;
      return "ok";
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "gated" });
    const approval = await waitFor(async () => (await listApprovals(rt.pool, ORG, { status: "pending", taskId }))[0], { what: "approval" });
    expect(approval).toMatchObject({ stepId: "publish", action: "dispatch", rule: "builtin:approval-hint" });
    expect((await rt.tasks.get(ORG, taskId)).status).toBe("parked");
    const decisions = await Promise.all([
      rt.tasks.decideApproval({ orgId: ORG, approvalId: approval.id, approve: true, actor: "user:ann" }),
      rt.tasks.decideApproval({ orgId: ORG, approvalId: approval.id, approve: false, actor: "user:bob" }),
      rt.tasks.decideApproval({ orgId: ORG, approvalId: approval.id, approve: true, actor: "user:cy" }),
    ]);
    const first = decisions.find((d) => !d.alreadyDecided)!;
    expect(decisions.filter((d) => !d.alreadyDecided)).toHaveLength(1);
    for (const d of decisions) expect(d.status).toBe(first.status);
    const task = await finished(rt, taskId);
    expect(task.status).toBe(first.status === "approved" ? "completed" : "failed");
    expect(publishRuns).toBe(first.status === "approved" ? 1 : 0);
    const approvals = (await listAudit(rt.pool, ORG, { taskId })).filter((a) => a.action === "approval");
    expect(approvals).toHaveLength(1);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("fails a denied hop closed with the rule and reason, and sends nothing", async () => {
    await putPolicy(rt.stores.policies, rt.pool, ORG, {
      rules: [{ id: "no-shell", action: "dispatch", destination: "role:shell", verdict: "deny", reason: "shell access is off" }],
    });
    await submit(rt, `
name: risky
steps:
  - { id: run, to: "role:shell" }
`);
    rt.startCoordinator();
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "risky" });
    const task = await rt.tasks.get(ORG, taskId);
    expect(task.status).toBe("failed");
    expect(task.error).toMatchObject({ code: "POLICY_DENIED", stepId: "run" });
    expect(task.error!.message).toContain("shell access is off");
    const stats = await rt.bus.stats("role:shell", "harness");
    expect(stats.length).toBe(0);
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit).toEqual([expect.objectContaining({ action: "dispatch", verdict: "deny", rule: "no-shell" })]);
  });

  it("retries a failing attempt with backoff and completes", async () => {
    await submit(rt, `
name: flaky
steps:
  - { id: try, to: "role:flaky", retries: 2, backoff: 50ms }
`);
    rt.startCoordinator();
    workers.start("flaky", async (work) => {
      if (work.attempt < 3) throw new Error(`attempt ${work.attempt} fails`);
      return { attempt: work.attempt };
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "flaky" });
    const task = await finished(rt, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps[0]).toMatchObject({ attempts: 3, output: { attempt: 3 } });
    const results = (await listAudit(rt.pool, ORG, { taskId })).filter((a) => a.action === "result").map((a) => a.verdict);
    expect(results).toEqual(["failed", "failed", "accepted"]);
  });

  it("re-dispatches an attempt that got no result within its timeout", async () => {
    await submit(rt, `
name: slow
steps:
  - { id: s, to: "role:slow", retries: 1, timeout: 1s }
`);
    rt.startCoordinator();
    workers.start("slow", async (work, ctx) => {
      if (work.attempt === 1) await new Promise((r) => setTimeout(r, 3000, ctx.signal));
      return { attempt: work.attempt };
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "slow" });
    const task = await finished(rt, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps[0]).toMatchObject({ attempts: 2, output: { attempt: 2 } });
    const actions = (await listAudit(rt.pool, ORG, { taskId })).map((a) => a.action);
    expect(actions).toEqual(["dispatch", "timeout", "dispatch", "result"]);
  });

  it("fails a foreign step closed: denied by default, and refused by the dispatcher port when allowed", async () => {
    await submit(rt, `
name: outside
steps:
  - { id: ask, to: "foreign:weather" }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "outside" });
    const task = await rt.tasks.get(ORG, taskId);
    expect(task.status).toBe("failed");
    expect(task.error).toMatchObject({ code: "POLICY_DENIED" });
    expect(task.error!.message).toContain("builtin:egress-disabled");
    // With egress switched on and a policy that allows it, the hop reaches the ForeignDispatcher port, whose
    // only adapter in this build refuses.
    const open = await createTestRuntime({ egress: { egressEnabled: () => true } });
    try {
      await putPolicy(open.stores.policies, open.pool, ORG, { default: "allow", rules: [] });
      await submitWorkflow(open.pool, ORG, parseWorkflowDefinition("name: outside\nsteps:\n  - { id: ask, to: \"foreign:weather\" }\n"));
      const second = await open.tasks.start({ orgId: ORG, workflow: "outside" });
      const t2 = await open.tasks.get(ORG, second.taskId);
      expect(t2.status).toBe("failed");
      expect(t2.error!.code).toBe("FOREIGN_UNAVAILABLE");
      const actions = (await listAudit(open.pool, ORG, { taskId: second.taskId })).map((a) => `${a.action}:${a.verdict}`);
      expect(actions).toEqual(["a2a_egress:allow", "result:failed"]);
    } finally {
      await open.cleanup();
    }
  });

  it("returns the same task for the same idempotency key", async () => {
    await submit(rt, `
name: once
steps:
  - { id: a, to: "role:echo" }
`);
    const a = await rt.tasks.start({ orgId: ORG, workflow: "once", idempotencyKey: "k1" });
    const b = await rt.tasks.start({ orgId: ORG, workflow: "once", idempotencyKey: "k1" });
    expect(b).toEqual({ ...a, created: false });
    expect(a.created).toBe(true);
  });

  it("reports unknown workflows and tenants clearly", async () => {
    await expect(rt.tasks.start({ orgId: ORG, workflow: "nope" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(rt.tasks.get("other-tenant", "00000000-0000-4000-8000-000000000000")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("accrues each tenant's daily cost and stops hops past the tenant's daily budget", async () => {
    await rt.pool.query("INSERT INTO tenants (org_id, name, daily_budget) VALUES ($1, 'Acme', 1.5)", [ORG]);
    await submit(rt, `
name: pricey
steps:
  - { id: one, to: "role:echo", cost_estimate: 1 }
  - { id: two, to: "role:echo", cost_estimate: 1 }
`);
    rt.startCoordinator();
    workers.start("echo", async (_work, ctx) => {
      ctx.usage({ cost: 1 });
      return "ok";
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "pricey" });
    const task = await finished(rt, taskId);
    expect(task.status).toBe("failed");
    expect(task.error).toMatchObject({ code: "BUDGET_EXCEEDED", stepId: "two" });
    const { rows } = await rt.pool.query("SELECT cost FROM tenant_daily_cost WHERE org_id = $1", [ORG]);
    expect(rows).toEqual([{ cost: 1 }]);
  });
});
