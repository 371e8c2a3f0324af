/**
 * Approval expiry: an approval nobody decided by its deadline is denied by `system:expiry`, its step fails closed
 * with POLICY_DENIED and the denial is audited — once, however many coordinators sweep at the same time.
 */
import { afterEach, describe, expect, it } from "vitest";
import { approvalExpirySweep, expireApprovals } from "../../src/approvals/expiry.js";
import { Coordinator } from "../../src/coordinator/coordinator.js";
import { setFlag } from "../../src/flags/flag-changes.js";
import { createPostgresFlagStore } from "../../src/store/flags/postgres-flag-store.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { approvalAuditRows, approvalOf, parkTask, snapshot, submitGated } from "./helpers.js";

const ORG = "acme";

describe("approval expiry", () => {
  let rt: TestRuntime | undefined;
  afterEach(async () => {
    await rt?.cleanup();
    rt = undefined;
  });

  it("denies an overdue approval on the coordinator's sweep: the step fails closed, audited", async () => {
    rt = await createTestRuntime({ coordinator: { approvalTtlMs: 300 } });
    await submitGated(rt, ORG);
    const { taskId, approvalId } = await parkTask(rt, ORG);
    const opened = await approvalOf(rt.pool, ORG, approvalId);
    expect(opened.status).toBe("pending");
    const ttl = Date.parse(opened.expiresAt!) - Date.parse(opened.createdAt);
    expect(ttl).toBeGreaterThan(200);
    expect(ttl).toBeLessThan(1000);

    rt.startCoordinator();
    const task = await waitForTask(rt.tasks, ORG, taskId, { until: (t) => t.status === "failed" });
    expect(task.steps[0]).toMatchObject({ status: "failed", error: expect.objectContaining({ code: "POLICY_DENIED", retryable: false }) });
    expect(task.steps[0]!.error!.message).toContain("approval denied by system:expiry: approval expired at");

    const closed = await approvalOf(rt.pool, ORG, approvalId);
    expect(closed).toMatchObject({ status: "denied", decidedBy: "system:expiry", decidedVia: "expiry", decisionReason: `approval expired at ${opened.expiresAt}` });
    expect(Date.parse(closed.decidedAt!)).toBeGreaterThanOrEqual(Date.parse(opened.expiresAt!));

    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.map((a) => `${a.action}:${a.verdict}:${a.actor}`)).toEqual([
      "dispatch:requires_approval:coordinator",
      "approval:denied:system:expiry",
    ]);
    expect(audit[1]).toMatchObject({ rule: `approval:${approvalId}`, reason: `approval expired at ${opened.expiresAt}` });
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
    // Nothing was published for the expired step.
    expect((await rt.bus.stats("role:publisher", "harness")).length).toBe(0);
  });

  it("leaves the approvals of a tenant whose coordinator is switched off until it is on again", async () => {
    rt = await createTestRuntime({ coordinator: { approvalTtlMs: 200 } });
    await submitGated(rt, ORG);
    const { taskId, approvalId } = await parkTask(rt, ORG);
    await setFlag(createPostgresFlagStore(), rt.pool, { name: "COORDINATOR_ENABLED", scopeKind: "tenant", scope: ORG, enabled: false, actor: "sre:test", reason: "pause" });
    await rt.flags.refresh();
    rt.startCoordinator();
    // Well past the deadline and several sweeps later, nothing moved.
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect((await approvalOf(rt.pool, ORG, approvalId)).status).toBe("pending");
    expect((await rt.tasks.get(ORG, taskId)).status).toBe("parked");
    await setFlag(createPostgresFlagStore(), rt.pool, { name: "COORDINATOR_ENABLED", scopeKind: "tenant", scope: ORG, enabled: true, actor: "sre:test", reason: "resume" });
    await rt.flags.refresh();
    await waitFor(async () => ((await rt!.tasks.get(ORG, taskId)).status === "failed" ? true : undefined), { what: "the expiry after the switch", timeoutMs: 10_000 });
    expect(await approvalOf(rt.pool, ORG, approvalId)).toMatchObject({ status: "denied", decidedBy: "system:expiry" });
  });

  it("leaves approvals before their deadline alone", async () => {
    rt = await createTestRuntime({ coordinator: { approvalTtlMs: 60_000 } });
    await submitGated(rt, ORG);
    const { taskId, approvalId } = await parkTask(rt, ORG);
    const before = await snapshot(rt, ORG, taskId, approvalId);
    const result = await expireApprovals({ pool: rt.pool, approvals: rt.stores.approvals, tasks: rt.tasks, now: Date.now() + 30_000 });
    expect(result).toEqual({ expired: 0, alreadyDecided: 0, failed: 0 });
    expect(await snapshot(rt, ORG, taskId, approvalId)).toEqual(before);
    expect(before.approval.status).toBe("pending");
  });

  it("expires each approval exactly once when two coordinators' sweeps race", async () => {
    rt = await createTestRuntime({ coordinator: { approvalTtlMs: 60_000 } });
    await submitGated(rt, ORG, "globex");
    const parked = [];
    for (let i = 0; i < 4; i++) parked.push({ org: ORG, ...(await parkTask(rt, ORG)) });
    for (let i = 0; i < 3; i++) parked.push({ org: "globex", ...(await parkTask(rt, "globex")) });
    const overdue = () => Date.now() + 120_000;
    const coordinator = (consumer: string) =>
      new Coordinator({
        pool: rt!.pool,
        store: rt!.stores.coordinator,
        bus: rt!.bus,
        engine: rt!.engine,
        publisher: rt!.publisher,
        verifier: rt!.busAuth.verifier(),
        consumer,
        batchSize: 100,
        blockMs: 100,
        reclaimIdleMs: 2000,
        sweepIntervalMs: 100,
        trimMaxLen: 1000,
        clock: overdue,
        sweepJobs: [approvalExpirySweep(rt!.stores)],
      });
    const [one, two] = [coordinator("one"), coordinator("two")];
    // Sweeps through the coordinators' expiry job, plus direct calls, all at once.
    const direct = await Promise.all([
      one.sweepOnce().then(() => undefined),
      two.sweepOnce().then(() => undefined),
      expireApprovals({ pool: rt.pool, approvals: rt.stores.approvals, tasks: rt.tasks, now: overdue() }),
      expireApprovals({ pool: rt.pool, approvals: rt.stores.approvals, tasks: rt.tasks, now: overdue() }),
      one.sweepOnce().then(() => undefined),
    ]);
    for (const result of direct) if (result) expect(result.failed).toBe(0);

    for (const p of parked) {
      const approval = await approvalOf(rt.pool, p.org, p.approvalId);
      expect(approval).toMatchObject({ status: "denied", decidedBy: "system:expiry", decidedVia: "expiry" });
      expect(await approvalAuditRows(rt, p.org, p.taskId)).toHaveLength(1);
      const task = await rt.tasks.get(p.org, p.taskId);
      expect(task.status).toBe("failed");
      expect(task.steps[0]!.error!.code).toBe("POLICY_DENIED");
    }
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
    expect((await verifyChain(rt.stores.audit, rt.pool, "globex")).ok).toBe(true);
    // A later sweep finds nothing left to do.
    expect(await expireApprovals({ pool: rt.pool, approvals: rt.stores.approvals, tasks: rt.tasks, now: overdue() })).toEqual({ expired: 0, alreadyDecided: 0, failed: 0 });
  });

  it("counts each expiry once across racing direct calls", async () => {
    rt = await createTestRuntime({ coordinator: { approvalTtlMs: 60_000 } });
    await submitGated(rt, ORG);
    for (let i = 0; i < 5; i++) await parkTask(rt, ORG);
    const now = Date.now() + 120_000;
    const results = await Promise.all([1, 2, 3].map(() => expireApprovals({ pool: rt!.pool, approvals: rt!.stores.approvals, tasks: rt!.tasks, now })));
    expect(results.reduce((n, r) => n + r.expired, 0)).toBe(5);
    expect(results.reduce((n, r) => n + r.failed, 0)).toBe(0);
    const rows = await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM audit_log WHERE action = 'approval'");
    expect(rows.rows[0]!.n).toBe(5);
  });

  it("turns a decision that arrives after the deadline into the expiry, before any sweep ran", async () => {
    rt = await createTestRuntime({ coordinator: { approvalTtlMs: 200 } });
    await submitGated(rt, ORG);
    const { taskId, approvalId } = await parkTask(rt, ORG);
    await new Promise((r) => setTimeout(r, 300));
    const late = await rt.tasks.decideApproval({ orgId: ORG, approvalId, approve: true, actor: "user:late", via: "api" });
    expect(late).toEqual({ status: "denied", decidedBy: "system:expiry", alreadyDecided: true });
    expect(await approvalOf(rt.pool, ORG, approvalId)).toMatchObject({ status: "denied", decidedBy: "system:expiry", decidedVia: "expiry" });
    expect((await rt.tasks.get(ORG, taskId)).status).toBe("failed");
    expect((await rt.bus.stats("role:publisher", "harness")).length).toBe(0);
    const rows = await approvalAuditRows(rt, ORG, taskId);
    expect(rows.map((r) => [r.actor, r.verdict])).toEqual([["system:expiry", "denied"]]);
  });

  it("records how each decision arrived", async () => {
    rt = await createTestRuntime();
    await submitGated(rt, ORG);
    const byApi = await parkTask(rt, ORG);
    const byCli = await parkTask(rt, ORG);
    const unsaid = await parkTask(rt, ORG);
    await rt.tasks.decideApproval({ orgId: ORG, approvalId: byApi.approvalId, approve: true, actor: "user:ann", via: "api" });
    await rt.tasks.decideApproval({ orgId: ORG, approvalId: byCli.approvalId, approve: false, actor: "cli", via: "cli" });
    await rt.tasks.decideApproval({ orgId: ORG, approvalId: unsaid.approvalId, approve: true, actor: "user:bo" });
    // A repeated decision by another route does not overwrite the first one's route.
    await rt.tasks.decideApproval({ orgId: ORG, approvalId: byApi.approvalId, approve: false, actor: "cli", via: "cli" });
    expect((await approvalOf(rt.pool, ORG, byApi.approvalId)).decidedVia).toBe("api");
    expect((await approvalOf(rt.pool, ORG, byCli.approvalId)).decidedVia).toBe("cli");
    expect((await approvalOf(rt.pool, ORG, unsaid.approvalId)).decidedVia).toBeNull();
  });
});
