/**
 * A worker's `ctx.reply` end to end: harness → signed CONTROL on the bus → coordinator → engine → reply row →
 * outcome back to the handler. And who may reply for a step: only the step's own worker (anyone else is dead-lettered),
 * for its current attempt while the step runs or within the grace window (else a refused row, reply_not_allowed).
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { createEnvelope, EnvelopeKind, jsonPayload } from "../../src/bus/codec.js";
import { putPolicy } from "../../src/governance/policy-store.js";
import type { ReplyOutcome, Work } from "../../src/harness/index.js";
import { publishSigned } from "../support/bus-auth.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { addConnection, auditRows, replyRows, requestReply, setupTenant, SLACK, startTask } from "./support.js";

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
    await putPolicy(rt.stores.policies, rt.pool, ORG, { default: "allow", rules: [{ id: "ask-first", action: "origin_reply", verdict: "requires_approval", reason: "review" }] });
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
      { replyDeadlineMs: 1_000 },
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

  it("dead-letters a reply from a worker of another role or the gateway, recording nothing", async () => {
    rt.startCoordinator();
    const taskId = await startTask(rt, ORG, SLACK);
    await waitFor(async () => (await rt.tasks.get(ORG, taskId)).steps[0]!.status === "dispatched", { what: "the step dispatched" });
    // A signed CONTROL reply from role:intruder naming the step of role:answerer, as a rogue worker would send it.
    const forged = createEnvelope({ id: randomUUID(), orgId: ORG, taskId, stepId: "answer", attempt: 1, kind: EnvelopeKind.CONTROL, payload: jsonPayload({ type: "reply", text: "I am not your worker", idempotencyKey: "k1" }) });
    await publishSigned(rt, "role:intruder", [forged]);
    const dead = await waitFor(async () => {
      const letters = await rt.bus.listDeadLetters(COORDINATOR_STREAM);
      return letters.length > 0 ? letters : undefined;
    }, { what: "the forged reply dead-lettered" });
    expect(dead.map((d) => d.reason)).toEqual([expect.stringMatching(/^REFUSED: .*role:intruder.*destination is role:answerer/)]);
    const gateway = await requestReply(rt, ORG, taskId, "from outside", { sender: { kind: "gateway", agent: "weather" }, stepId: "answer", attempt: 1 });
    expect(gateway.result.refused.map((r) => r.label)).toEqual(["wrong_sender"]);
    expect(await replyRows(rt, taskId)).toEqual([]);
    expect((await auditRows(rt, ORG, taskId)).map((a) => a.action)).toEqual(["dispatch"]);
    // The step's own worker, current attempt: recorded.
    const own = await requestReply(rt, ORG, taskId, "from the right worker", { sender: { kind: "queue", endpoint: "role:answerer" }, stepId: "answer", attempt: 1 });
    expect(own.result.refused).toEqual([]);
    expect((await replyRows(rt, taskId)).map((r) => [r.state, r.actor])).toEqual([["pending", "worker:role:answerer"]]);
  });

  it("answers a worker whose step was retried refused/reply_not_allowed at once, not at the deadline", async () => {
    await setupTenant(rt, ORG, 'name: retried\nsteps:\n  - { id: answer, to: "role:answerer", timeout: 1s, retries: 1 }\n');
    rt.startCoordinator();
    const deadlineMs = 15_000;
    let late: { outcome: ReplyOutcome; elapsedMs: number } | undefined;
    workers.start(
      "answerer",
      async (work, ctx) => {
        if (work.attempt !== 1) return "ok";
        // Outlive the step's timeout: the coordinator retries it as attempt 2, then this attempt speaks up.
        await waitFor(async () => (await rt.tasks.get(ORG, work.taskId)).steps[0]!.attempts === 2, { what: "attempt 2 dispatched" });
        const started = performance.now();
        const outcome = await ctx.reply("words from attempt 1");
        late = { outcome, elapsedMs: performance.now() - started };
        return "late";
      },
      { replyDeadlineMs: deadlineMs },
    );
    const taskId = await startTask(rt, ORG, SLACK, "retried");
    const { outcome, elapsedMs } = await waitFor(async () => late, { what: "attempt 1's reply outcome", timeoutMs: deadlineMs + 10_000 });
    expect(outcome).toMatchObject({ status: "refused", code: "reply_not_allowed" });
    expect(outcome.message).toMatch(/attempt 2; attempt 1 was retried or timed out/);
    // Far below the deadline (it used to wait all of it, then answer unknown/outcome_pending with no reply id).
    expect(elapsedMs).toBeLessThan(deadlineMs / 5);
    expect((await waitForTask(rt.tasks, ORG, taskId)).status).toBe("completed");
    const rows = await replyRows(rt, taskId);
    expect(rows.map((r) => [r.id, r.state, r.code, r.actor, r.step_id, r.text])).toEqual([[outcome.replyId, "refused", "reply_not_allowed", "worker:role:answerer", "answer", ""]]);
    const audit = (await auditRows(rt, ORG, taskId)).filter((a) => a.action === "origin_reply");
    expect(audit.map((a) => [a.verdict, a.rule])).toEqual([["deny", "builtin:reply_not_allowed"]]);
    expect(await rt.bus.listDeadLetters(COORDINATOR_STREAM)).toEqual([]);
  });

  it("answers refused/reply_not_allowed to the step's worker replying after the task ended beyond the grace window", async () => {
    await setupTenant(rt, ORG, 'name: abandoned\nsteps:\n  - { id: answer, to: "role:answerer", timeout: 500ms }\n');
    rt.startCoordinator();
    const outcomes: ReplyOutcome[] = [];
    workers.start(
      "answerer",
      async (work, ctx) => {
        // The step times out (no retries), so the task fails while this attempt, still its current one, runs on.
        await waitFor(async () => (await rt.tasks.get(ORG, work.taskId)).status === "failed", { what: "the task failed" });
        await rt.pool.query("UPDATE tasks SET finished_at = now() - interval '1 hour' WHERE id = $1", [work.taskId]);
        outcomes.push(await ctx.reply("sorry I am late"));
        return "late";
      },
      { replyDeadlineMs: 20_000 },
    );
    const taskId = await startTask(rt, ORG, SLACK, "abandoned");
    await waitFor(async () => outcomes.length > 0, { what: "the late reply's outcome", timeoutMs: 30_000 });
    expect(outcomes[0]).toMatchObject({ status: "refused", code: "reply_not_allowed" });
    expect(outcomes[0]!.message).toMatch(/ended more than/);
    expect((await replyRows(rt, taskId)).map((r) => [r.state, r.code])).toEqual([["refused", "reply_not_allowed"]]);
  });
});
