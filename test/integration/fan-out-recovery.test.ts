/**
 * Fan-out delegation (issue 14) when the origin cannot take its replies at once: it timed out (a fresh attempt; the
 * old attempt's replies are orphans by attempt guard), or a policy holds each REPLY for a human (the replies behind
 * the parked one wait their turn and go out in the order they arrived).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { putPolicy } from "../../src/governance/policy-store.js";
import { listApprovals } from "../../src/store/approvals/postgres-approval-store.js";
import type { Handler } from "../../src/harness/index.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { ORG, Gates, auditOf, counterTotal, expectSerial, expectStateCarried, inStartOrder, recordTurns, rowsOf, submit, type TurnRecord, delegationSteps } from "./fan-out-support.js";

/** Asks `to` once per key; records each reply's correlation id in its state; finishes when nothing is outstanding. */
function collector(to: string, keys: (attempt: number) => string[], onFirstTurn?: (attempt: number) => void): Handler {
  return (work, ctx) => {
    if (!work.resume) {
      onFirstTurn?.(work.attempt);
      const queries = keys(work.attempt).map((key) => ({ to, payload: { attempt: work.attempt, key }, correlationId: key }));
      return ctx.delegateAll(queries, { state: { seen: [] } });
    }
    const seen = [...(work.resume.state as { seen: string[] }).seen, work.resume.reply.correlationId];
    return work.resume.outstanding.length > 0 ? ctx.awaitMore({ seen }) : { attempt: work.attempt, seen };
  };
}

describe("fan-out recovery", () => {
  let rt: TestRuntime;
  let workers: Workers;
  let gates: Gates;
  let turns: TurnRecord[];
  beforeEach(async () => {
    rt = await createTestRuntime();
    workers = new Workers(rt);
    gates = new Gates();
    turns = [];
    rt.startCoordinator();
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  it("retries a timed-out orchestrator as a fresh attempt; replies to the old attempt are orphans, the new one completes", async () => {
    await submit(rt.pool, `
name: patient
steps:
  - { id: orch, to: "role:orch", timeout: 1500ms, retries: 1 }
`);
    workers.start("orch", recordTurns(turns, collector("role:slow", (attempt) => [`a${attempt}-x`, `a${attempt}-y`], (attempt) => {
      if (attempt === 2) gates.open("attempt 2 started");
    })));
    workers.start("slow", async (work) => {
      const { attempt, key } = work.input as { attempt: number; key: string };
      if (attempt === 1) {
        // Outlives the origin's timeout: answers only once the origin's second attempt is running.
        await gates.wait("attempt 2 started");
      } else {
        // The new attempt's answers wait until the old answers were applied, so those are orphaned while the task
        // is still open (and the new attempt cannot mistake them for its own).
        await waitFor(async () => {
          const { rows } = await rt.pool.query("SELECT count(*)::int AS n FROM steps WHERE task_id = $1 AND step_id IN ('orch.d1', 'orch.d2') AND status = 'completed'", [work.taskId]);
          return rows[0].n === 2 || undefined;
        }, { what: "the first attempt's delegates to complete" });
      }
      return { attempt, key };
    });

    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "patient" });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("completed");
    const orch = task.steps.find((s) => s.id === "orch")!;
    expect(orch.attempts).toBe(2);
    expect((orch.output as { attempt: number; seen: string[] }).attempt).toBe(2);
    expect([...(orch.output as { seen: string[] }).seen].sort()).toEqual(["a2-x", "a2-y"]);
    expect(delegationSteps(task.steps).map((s) => `${s.id}:${s.status}`)).toEqual([
      "orch.d1:completed", "orch.d2:completed", "orch.d3:completed", "orch.d4:completed",
    ]);

    // Attempt 1 ran one turn and was never resumed; attempt 2 was resumed by its own replies only.
    expect(turns.filter((t) => t.attempt === 1).map((t) => t.outcome)).toEqual(["stood_down"]);
    const second = inStartOrder(turns.filter((t) => t.attempt === 2));
    expect(second).toHaveLength(3);
    expect(second.slice(1).every((t) => t.reply!.correlationId.startsWith("a2-"))).toBe(true);
    expectSerial(turns);
    expectStateCarried(second);

    const audit = await auditOf(rt.pool, taskId);
    expect(rowsOf(audit, "timeout")).toEqual(["orch:failed"]);
    const replies = audit.filter((a) => a.action === "reply");
    expect(replies.map((a) => `${a.stepId}:${a.verdict}`).sort()).toEqual(["orch.d1:orphaned", "orch.d2:orphaned", "orch:allow", "orch:allow"]);
    expect(replies.filter((a) => a.verdict === "orphaned").map((a) => a.rule)).toEqual(["builtin:orphan", "builtin:orphan"]);
    expect(await counterTotal(rt.metrics.orphanReplies)).toBe(2);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("holds each fan-out reply for approval: the second waits queued behind the parked first, then both go out in order", async () => {
    await putPolicy(rt.stores.policies, rt.pool, ORG, { rules: [{ id: "read-replies", action: "reply", verdict: "requires_approval", reason: "a human reads every reply" }] });
    await submit(rt.pool, `
name: reviewed
steps:
  - { id: orch, to: "role:orch" }
`);
    workers.start("orch", recordTurns(turns, collector("role:expert", () => ["first", "second"])));
    workers.start("expert", async (work) => {
      const { key } = work.input as { key: string };
      // The second expert answers only while the first reply is parked.
      if (key === "second") await gates.wait("first reply parked");
      return { key };
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "reviewed" });

    const pendingApproval = (exclude: string[] = []) =>
      waitFor(async () => (await listApprovals(rt.pool, ORG, { status: "pending", taskId })).find((a) => !exclude.includes(a.id)), { what: "a pending approval" });
    const first = await pendingApproval();
    expect(first).toMatchObject({ action: "reply", stepId: "orch" });
    expect((await rt.tasks.get(ORG, taskId)).status).toBe("parked");
    gates.open("first reply parked");
    // The second result is applied (its step completes) while the first reply is parked: it queues behind it, with
    // no approval of its own yet and no turn of the origin run.
    await waitForTask(rt.tasks, ORG, taskId, { until: (t) => t.steps.find((s) => s.id === "orch.d2")?.status === "completed" });
    expect(await listApprovals(rt.pool, ORG, { status: "pending", taskId })).toHaveLength(1);
    expect(turns).toHaveLength(1);

    await rt.tasks.decideApproval({ orgId: ORG, approvalId: first.id, approve: true, actor: "user:ann" });
    // The first reply runs a turn, which keeps waiting; the queued second reply then asks for its own approval.
    const second = await pendingApproval([first.id]);
    expect(turns.map((t) => t.reply?.correlationId)).toEqual([undefined, "first"]);
    expect(turns[1]!.outstanding).toEqual(["second"]);
    await rt.tasks.decideApproval({ orgId: ORG, approvalId: second.id, approve: true, actor: "user:ann" });

    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.find((s) => s.id === "orch")!.output).toEqual({ attempt: 1, seen: ["first", "second"] });
    expect(inStartOrder(turns).map((t) => t.reply?.correlationId)).toEqual([undefined, "first", "second"]);
    expectSerial(turns);
    expectStateCarried(turns);
    const audit = await auditOf(rt.pool, taskId);
    expect(audit.filter((a) => a.action === "reply" || a.action === "approval").map((a) => `${a.action}:${a.verdict}`)).toEqual([
      "reply:requires_approval", "approval:approved", "reply:allow",
      "reply:requires_approval", "approval:approved", "reply:allow",
    ]);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });
});
