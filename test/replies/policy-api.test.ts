/**
 * The reply verb through the tenant's API path (TaskService.reply): governed as `origin_reply` by the tenant's
 * policy (deny, requires_approval → parked → approved/denied/expired), the grace window after a task ended, and
 * what `task get` shows (replyTo and every reply, never the text).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listApprovals } from "../../src/store/approvals/postgres-approval-store.js";
import { TaskService } from "../../src/tasks/tasks.js";
import { isSwitchyardError } from "../../src/errors.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { putPolicy } from "../../src/governance/policy-store.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { addConnection, auditRows, replyRows, setupTenant, SLACK, startTask } from "./support.js";

/** Each tenant its own policy (the runtime caches policies for a second). */
const OPEN = "open-co";
const DENY = "deny-co";
const GATED = "gated-co";

describe("replies through the API, governed by the tenant's policy", () => {
  let rt: TestRuntime;
  /** A task service whose reply waits briefly: nothing dials in these tests, so allowed rows stay pending. */
  let tasks: TaskService;
  const connections: Record<string, string> = {};

  beforeAll(async () => {
    rt = await createTestRuntime({ flags: { replyEnabled: true, replyTenants: "*" } });
    tasks = new TaskService({ pool: rt.pool, engine: rt.engine, approvals: rt.stores.approvals, tasks: rt.stores.tasks, replies: rt.stores.replies, publisher: rt.publisher, maxPayloadBytes: rt.config.bus.maxPayloadBytes, replyDeadlineMs: 300 });
    for (const org of [OPEN, DENY, GATED]) {
      await setupTenant(rt, org);
      connections[org] = await addConnection(rt, org, { kind: "slack", accountKey: "T0ACME" });
    }
    await putPolicy(rt.stores.policies, rt.pool, DENY, { default: "allow", rules: [{ id: "no-replies", action: "origin_reply", verdict: "deny", reason: "we never post back" }] });
    await putPolicy(rt.stores.policies, rt.pool, GATED, { default: "allow", rules: [{ id: "ask-first", action: "origin_reply", verdict: "requires_approval", reason: "a human reads replies first" }] });
  });
  afterAll(async () => {
    await rt.cleanup();
  });

  it("an allowed reply is recorded pending; with no sender yet the caller gets unknown/outcome_pending naming the row", async () => {
    const taskId = await startTask(rt, OPEN, SLACK);
    const outcome = await tasks.reply({ orgId: OPEN, taskId, text: "working on it", actor: "user:ann" });
    const rows = await replyRows(rt, taskId);
    expect(rows.map((r) => [r.state, r.actor, r.step_id, r.connection_id])).toEqual([["pending", "user:ann", null, connections[OPEN]]]);
    expect(outcome).toMatchObject({ status: "unknown", code: "outcome_pending", replyId: rows[0]!.id });
    // A repeat returns the same row (still pending) and records nothing more.
    const again = await tasks.reply({ orgId: OPEN, taskId, text: "working on it", actor: "user:ann" });
    expect(again.replyId).toBe(rows[0]!.id);
    expect(await replyRows(rt, taskId)).toHaveLength(1);
  });

  it("kicks the attached reply sender after the commit that made a row pending, not for a refusal", async () => {
    const kicked: number[] = [];
    rt.replyKicks.attach({ kick: () => kicked.push(Date.now()) });
    try {
      const refusedTask = await startTask(rt, DENY, SLACK);
      await tasks.reply({ orgId: DENY, taskId: refusedTask, text: "no", actor: "user:ann" });
      expect(kicked).toHaveLength(0);
      const taskId = await startTask(rt, OPEN, SLACK);
      await tasks.reply({ orgId: OPEN, taskId, text: "yes", actor: "user:kick" });
      expect(kicked).toHaveLength(1);
    } finally {
      rt.replyKicks.attach(undefined);
    }
  });

  it("returns the recorded outcome of a settled row at once (what the sender writes)", async () => {
    const taskId = await startTask(rt, OPEN, SLACK);
    const first = await tasks.reply({ orgId: OPEN, taskId, text: "done", actor: "user:ann", idempotencyKey: "final" });
    await rt.pool.query("UPDATE origin_replies SET state = 'sent', permalink = 'https://acme.slack.com/archives/C0GENERAL/p1' WHERE id = $1", [first.replyId]);
    const repeat = await tasks.reply({ orgId: OPEN, taskId, text: "done (again)", actor: "user:bob", idempotencyKey: "final" });
    expect(repeat).toEqual({ status: "sent", replyId: first.replyId, permalink: "https://acme.slack.com/archives/C0GENERAL/p1" });
  });

  it("a tenant policy denying origin_reply refuses with policy_denied, audited with the policy's rule", async () => {
    const taskId = await startTask(rt, DENY, SLACK);
    const outcome = await tasks.reply({ orgId: DENY, taskId, text: "hello", actor: "user:ann" });
    expect(outcome).toMatchObject({ status: "refused", code: "policy_denied" });
    expect((await replyRows(rt, taskId)).map((r) => [r.state, r.code])).toEqual([["refused", "policy_denied"]]);
    const audit = (await auditRows(rt, DENY, taskId)).filter((a) => a.action === "origin_reply");
    expect(audit.map((a) => [a.verdict, a.rule])).toEqual([["deny", "no-replies"]]);
  });

  it("requires_approval parks the reply with an approval; approved it becomes pending, denied it is refused", async () => {
    const taskId = await startTask(rt, GATED, SLACK);
    const parked = await tasks.reply({ orgId: GATED, taskId, text: "may I?", actor: "user:ann" });
    expect(parked.status).toBe("parked");
    expect(parked.approvalId).toBeDefined();
    const approval = (await listApprovals(rt.pool, GATED, { taskId }))[0]!;
    expect(approval).toMatchObject({ id: parked.approvalId, action: "origin_reply", status: "pending", stepId: "" });
    const link = await rt.pool.query("SELECT reply_id FROM approvals WHERE id = $1", [approval.id]);
    expect(link.rows[0].reply_id).toBe(parked.replyId);

    const decided = await tasks.decideApproval({ orgId: GATED, approvalId: approval.id, approve: true, actor: "user:boss", via: "api" });
    expect(decided).toMatchObject({ status: "approved", alreadyDecided: false });
    expect((await replyRows(rt, taskId)).map((r) => [r.id, r.state])).toEqual([[parked.replyId, "pending"]]);

    const second = await tasks.reply({ orgId: GATED, taskId, text: "and this?", actor: "user:ann" });
    expect(second.status).toBe("parked");
    await tasks.decideApproval({ orgId: GATED, approvalId: second.approvalId!, approve: false, actor: "user:boss", reason: "not now", via: "api" });
    const rows = await replyRows(rt, taskId);
    expect(rows.find((r) => r.id === second.replyId)).toMatchObject({ state: "refused", code: "approval_denied", text: "" });
    const audit = (await auditRows(rt, GATED, taskId)).filter((a) => a.action === "origin_reply" || a.action === "approval");
    expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual([
      "origin_reply:requires_approval",
      "approval:approved",
      "origin_reply:allow",
      "origin_reply:requires_approval",
      "approval:denied",
    ]);
    expect((await verifyChain(rt.stores.audit, rt.pool, GATED)).ok).toBe(true);
  });

  it("an approval that expires refuses the reply with approval_expired", async () => {
    const taskId = await startTask(rt, GATED, SLACK);
    const parked = await tasks.reply({ orgId: GATED, taskId, text: "too late?", actor: "user:ann" });
    await rt.pool.query("UPDATE approvals SET expires_at = now() - interval '1 minute' WHERE id = $1", [parked.approvalId]);
    await tasks.decideApproval({ orgId: GATED, approvalId: parked.approvalId!, approve: true, actor: "user:boss", via: "api" });
    expect((await replyRows(rt, taskId)).map((r) => [r.state, r.code])).toEqual([["refused", "approval_expired"]]);
  });

  it("accepts a reply for a task that ended within the grace window, refuses one after it (FAILED_PRECONDITION)", async () => {
    const taskId = await startTask(rt, OPEN, SLACK);
    await rt.tasks.cancel(OPEN, taskId, "user:ann", "done by hand");
    const inWindow = await tasks.reply({ orgId: OPEN, taskId, text: "closing this", actor: "user:ann" });
    expect(inWindow.code).toBe("outcome_pending");
    await rt.pool.query("UPDATE tasks SET finished_at = now() - interval '1 hour' WHERE id = $1", [taskId]);
    const late = await tasks.reply({ orgId: OPEN, taskId, text: "much later", actor: "user:ann" }).catch((e: unknown) => e);
    expect(isSwitchyardError(late, "FAILED_PRECONDITION")).toBe(true);
    expect(await replyRows(rt, taskId)).toHaveLength(1);
  });

  it("NOT_FOUND for another tenant's task", async () => {
    const taskId = await startTask(rt, OPEN, SLACK);
    const error = await tasks.reply({ orgId: DENY, taskId, text: "not mine", actor: "user:eve" }).catch((e: unknown) => e);
    expect(isSwitchyardError(error, "NOT_FOUND")).toBe(true);
    expect(await replyRows(rt, taskId)).toHaveLength(0);
  });

  it("task get shows replyTo and every reply without its text", async () => {
    const taskId = await startTask(rt, DENY, SLACK);
    await tasks.reply({ orgId: DENY, taskId, text: "the secret sauce", actor: "user:ann" });
    const view = await rt.tasks.get(DENY, taskId);
    expect(view.replyTo).toEqual({ kind: "slack_thread", display: "slack T0ACME C0GENERAL thread 1700000000.000100" });
    expect(view.replies).toHaveLength(1);
    expect(view.replies[0]).toMatchObject({ state: "refused", code: "policy_denied", actor: "user:ann", stepId: null, addressDisplay: view.replyTo!.display });
    expect(JSON.stringify(view)).not.toContain("secret sauce");
    const none = await rt.tasks.get(OPEN, await startTask(rt, OPEN, null));
    expect(none.replyTo).toBeNull();
    expect(none.replies).toEqual([]);
  });
});
