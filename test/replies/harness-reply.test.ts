/**
 * A worker's `ctx.reply` end to end: harness → signed CONTROL on the bus → coordinator → engine → reply row →
 * outcome back to the handler. And who may reply for a step: only the step's own worker, for its current attempt.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { putPolicy } from "../../src/governance/policy-store.js";
import type { ReplyOutcome, Work } from "../../src/harness/index.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { addConnection, replyRows, requestReply, setupTenant, SLACK, startTask } from "./support.js";

const ORG = "acme";

describe("ctx.reply", () => {
  let rt: TestRuntime;
  let workers: Workers;
  beforeEach(async () => {
    rt = await createTestRuntime({ flags: { replyEnabled: true, replyTenants: "*" } });
    workers = new Workers(rt);
    await setupTenant(rt, ORG);
    await addConnection(rt, ORG, { kind: "slack", accountKey: "T0ACME" });
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  it("returns refused/no_reply_address for a task without an address, and the handler sees work.replyTo null", async () => {
    rt.startCoordinator();
    const seen: Array<{ replyTo: Work["replyTo"]; outcome: ReplyOutcome }> = [];
    workers.start("answerer", async (work, ctx) => {
      seen.push({ replyTo: work.replyTo, outcome: await ctx.reply("all done") });
      return "ok";
    });
    const taskId = await startTask(rt, ORG, null);
    expect((await waitForTask(rt.tasks, ORG, taskId)).status).toBe("completed");
    expect(seen).toHaveLength(1);
    expect(seen[0]!.replyTo).toBeNull();
    expect(seen[0]!.outcome).toMatchObject({ status: "refused", code: "no_reply_address" });
    const rows = await replyRows(rt, taskId);
    expect(rows.map((r) => [r.id, r.state, r.actor, r.step_id])).toEqual([[seen[0]!.outcome.replyId, "refused", "worker:role:answerer", "answer"]]);
  });

  it("returns parked with the approval when the tenant's policy wants one; work.replyTo shows the address", async () => {
    await putPolicy(rt.pool, ORG, { default: "allow", rules: [{ id: "ask-first", action: "origin_reply", verdict: "requires_approval", reason: "review" }] });
    rt.startCoordinator();
    const seen: Array<{ replyTo: Work["replyTo"]; outcome: ReplyOutcome }> = [];
    workers.start("answerer", async (work, ctx) => {
      seen.push({ replyTo: work.replyTo, outcome: await ctx.reply("the answer is 42", { idempotencyKey: "answer-1" }) });
      return "ok";
    });
    const taskId = await startTask(rt, ORG, SLACK);
    expect((await waitForTask(rt.tasks, ORG, taskId)).status).toBe("completed");
    expect(seen[0]!.replyTo).toEqual({ kind: "slack_thread", display: "slack T0ACME C0GENERAL thread 1700000000.000100" });
    expect(seen[0]!.outcome).toMatchObject({ status: "parked" });
    const rows = await replyRows(rt, taskId);
    expect(rows.map((r) => [r.state, r.approval_id])).toEqual([["parked", seen[0]!.outcome.approvalId]]);
    // Approved after the task completed (within the grace window): pending, for the sender to dial.
    await rt.tasks.decideApproval({ orgId: ORG, approvalId: seen[0]!.outcome.approvalId!, approve: true, actor: "user:boss" });
    expect((await replyRows(rt, taskId)).map((r) => r.state)).toEqual(["pending"]);
  });

  it("an allowed reply is committed pending and the handler gets outcome_pending until a sender settles it", async () => {
    // This runtime has no encryption key, so its sender dials nothing (test/origin/ covers the dial end to end).
    rt.startCoordinator();
    const outcomes: ReplyOutcome[] = [];
    workers.start(
      "answerer",
      async (_work, ctx) => {
        outcomes.push(await ctx.reply("progress: halfway"));
        outcomes.push(await ctx.reply("progress: halfway")); // same words, same default key: the same row
        return "ok";
      },
      { replyDeadlineMs: 200 },
    );
    const taskId = await startTask(rt, ORG, SLACK);
    expect((await waitForTask(rt.tasks, ORG, taskId)).status).toBe("completed");
    const rows = await replyRows(rt, taskId);
    expect(rows.map((r) => r.state)).toEqual(["pending"]);
    expect(outcomes.map((o) => [o.status, o.code, o.replyId])).toEqual([
      ["unknown", "outcome_pending", rows[0]!.id],
      ["unknown", "outcome_pending", rows[0]!.id],
    ]);
  });

  it("refuses a reply from a worker of another role, or for a stale attempt (nothing recorded)", async () => {
    const taskId = await startTask(rt, ORG, SLACK);
    await waitFor(async () => (await rt.tasks.get(ORG, taskId)).steps[0]!.status === "dispatched", { what: "the step dispatched" });
    const other = await requestReply(rt, ORG, taskId, "I am not your worker", { sender: { kind: "queue", endpoint: "role:intruder" }, stepId: "answer", attempt: 1 });
    expect(other.result.refused.map((r) => r.label)).toEqual(["wrong_sender"]);
    expect(other.result.refused[0]!.reason).toContain("role:intruder");
    const stale = await requestReply(rt, ORG, taskId, "from an old attempt", { sender: { kind: "queue", endpoint: "role:answerer" }, stepId: "answer", attempt: 0 });
    expect(stale.result.refused.map((r) => r.label)).toEqual(["wrong_sender"]);
    expect(stale.result.refused[0]!.reason).toContain("current attempt is 1");
    const gateway = await requestReply(rt, ORG, taskId, "from outside", { sender: { kind: "gateway", agent: "weather" }, stepId: "answer", attempt: 1 });
    expect(gateway.result.refused.map((r) => r.label)).toEqual(["wrong_sender"]);
    expect(await replyRows(rt, taskId)).toEqual([]);
    // The step's own worker, current attempt: recorded.
    const own = await requestReply(rt, ORG, taskId, "from the right worker", { sender: { kind: "queue", endpoint: "role:answerer" }, stepId: "answer", attempt: 1 });
    expect(own.result.refused).toEqual([]);
    expect((await replyRows(rt, taskId)).map((r) => [r.state, r.actor])).toEqual([["pending", "worker:role:answerer"]]);
  });
});
