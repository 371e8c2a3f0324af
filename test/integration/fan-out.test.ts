/**
 * Fan-out delegation (issue 14) end to end, one process: an orchestrator asks several roles in one turn and is woken
 * once per reply, one turn at a time, in the order the coordinator applied the delegates' results, carrying its
 * state across; it can keep waiting (awaitMore) or ask more; replies arriving after it finished are orphans.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { verifyChain } from "../../src/governance/audit-verify.js";
import type { Handler, Work } from "../../src/harness/index.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { COORDINATOR_GROUP } from "../../src/coordinator/inbox-intake.js";
import { Workers } from "../support/workers.js";
import {
  ORG,
  Gates,
  auditOf,
  counterTotal,
  expectSerial,
  expectStateCarried,
  inStartOrder,
  recordTurns,
  resultOrder,
  rowsOf,
  sleep,
  submit,
  delegationSteps,
  type TurnRecord,
} from "./fan-out-support.js";

interface Gathered {
  seen: string[];
  answers: Record<string, unknown>;
}

/**
 * The orchestrator of these tests: asks `queries` on its first turn; on each reply reads the delegate's result
 * (or keeps its error), records the correlation id in its state, and keeps waiting until nothing is outstanding.
 */
function gatherer(queries: (work: Work) => Array<{ to: string; payload: unknown; correlationId: string }>, options: { turnCost?: number } = {}): Handler {
  return async (work, ctx) => {
    // Long enough that two turns running at once would overlap measurably in the turn log.
    await sleep(5 + Math.random() * 20);
    if (options.turnCost) ctx.usage({ cost: options.turnCost });
    if (!work.resume) return ctx.delegateAll(queries(work), { state: { seen: [], answers: {} } satisfies Gathered });
    const { reply, state, outstanding } = work.resume;
    const previous = state as Gathered;
    const answer = reply.status === "ok" ? await ctx.readResult(reply.resultRef) : { error: reply.error };
    const next: Gathered = { seen: [...previous.seen, reply.correlationId], answers: { ...previous.answers, [reply.correlationId]: answer } };
    return outstanding.length > 0 ? ctx.awaitMore(next) : next;
  };
}

describe("fan-out delegation", () => {
  let rt: TestRuntime;
  let workers: Workers;
  beforeEach(async () => {
    rt = await createTestRuntime({ coordinator: { defaultStepTimeoutMs: 5000 } });
    workers = new Workers(rt);
    rt.startCoordinator();
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  it("wakes the orchestrator once per reply, serially, in the order the results were applied, with its state carried", async () => {
    await submit(rt.pool, `
name: fan
steps:
  - { id: orch, to: "role:orch", cost_estimate: 1 }
`);
    const turns: TurnRecord[] = [];
    workers.start(
      "orch",
      recordTurns(turns, gatherer(() => [
        { to: "role:a", payload: { ask: "a" }, correlationId: "ca" },
        { to: "role:b", payload: { ask: "b" }, correlationId: "cb" },
        { to: "role:c", payload: { ask: "c" }, correlationId: "cc" },
      ], { turnCost: 0.1 })),
    );
    // Random delays: the arrival order is whatever it turns out to be; the assertions compare it with the audit.
    workers.start("a", async (work, ctx) => {
      await sleep(Math.random() * 150);
      ctx.usage({ cost: 0.5 });
      return { by: "a", asked: work.input };
    });
    workers.start("b", async (work, ctx) => {
      await sleep(Math.random() * 150);
      ctx.usage({ cost: 0.25 });
      return { by: "b", asked: work.input };
    });
    workers.start("c", async () => {
      await sleep(Math.random() * 150);
      throw new Error("c is out of order");
    });

    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "fan" });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("completed");
    const audit = await auditOf(rt.pool, taskId);
    const receipt = await resultOrder(rt.pool, taskId, audit);
    expect([...receipt].sort()).toEqual(["ca", "cb", "cc"]);

    // One first turn and exactly three resumed ones, never two at once.
    expect(turns).toHaveLength(4);
    expectSerial(turns);
    const [first, ...resumed] = inStartOrder(turns);
    expect(first!.reply).toBeUndefined();
    // Each reply once, in the order the coordinator received the results.
    expect(resumed.map((t) => t.reply!.correlationId)).toEqual(receipt);
    // `outstanding` shrinks 2, 1, 0, and lists exactly the ids not yet handed over, in the order they were asked.
    expect(resumed.map((t) => t.outstanding)).toEqual(
      receipt.map((_, i) => ["ca", "cb", "cc"].filter((id) => !receipt.slice(0, i + 1).includes(id))),
    );
    expect(resumed.map((t) => t.outstanding!.length)).toEqual([2, 1, 0]);
    expectStateCarried(turns);
    expect(resumed[0]!.stateSeen).toEqual({ seen: [], answers: {} });

    const orch = task.steps.find((s) => s.id === "orch")!;
    expect(orch.output).toEqual({
      seen: receipt,
      answers: {
        ca: { by: "a", asked: { ask: "a" } },
        cb: { by: "b", asked: { ask: "b" } },
        cc: { error: { code: "HANDLER_FAILED", message: expect.stringContaining("c is out of order") } },
      },
    });
    const delegates = delegationSteps(task.steps).map((s) => [s.id, s.destination, s.status]);
    expect(delegates).toEqual([
      ["orch.d1", "role:a", "completed"],
      ["orch.d2", "role:b", "completed"],
      ["orch.d3", "role:c", "failed"],
    ]);

    // One query row per sub-query (the awaitMore stand-downs are query rows of their own), one governed hop per
    // delegate, one delivered reply per reply; nothing orphaned.
    const subQueryRows = audit.filter((a) => a.action === "query" && a.rule === "builtin:query");
    expect(subQueryRows.map((a) => `${a.stepId}:${a.verdict}`)).toEqual(["orch:accepted", "orch:accepted", "orch:accepted"]);
    expect(audit.filter((a) => a.action === "query")).toHaveLength(3 + 2);
    expect(rowsOf(audit, "sub_query")).toEqual(["orch.d1:allow", "orch.d2:allow", "orch.d3:allow"]);
    expect(rowsOf(audit, "reply")).toEqual(["orch:allow", "orch:allow", "orch:allow"]);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);

    // Four orchestrator turns at 0.1 each (the estimate of 1 is replaced by what was spent), 0.5 and 0.25 for the
    // delegates that answered, nothing for the one that threw.
    expect(orch.cost).toBeCloseTo(0.4);
    expect(task.steps.find((s) => s.id === "orch.d1")!.cost).toBeCloseTo(0.5);
    expect(task.steps.find((s) => s.id === "orch.d2")!.cost).toBeCloseTo(0.25);
    expect(task.cost).toBeCloseTo(1.15);
    expect(task.cost).toBeCloseTo(task.steps.reduce((sum, s) => sum + s.cost, 0));
    // What was spent is on the audit trail: each turn's spend on its stand-down (query) or result row.
    const spent = audit.filter((a) => a.action === "query" || a.action === "result").reduce((sum, a) => sum + a.cost, 0);
    expect(spent).toBeCloseTo(task.cost);
  });

  it("keeps waiting with awaitMore, then asks more from a resumed turn: outstanding lists the old and new sub-queries", async () => {
    await submit(rt.pool, `
name: more
steps:
  - { id: orch, to: "role:orch" }
`);
    const gates = new Gates();
    const turns: TurnRecord[] = [];
    workers.start(
      "orch",
      recordTurns(turns, async (work, ctx) => {
        if (!work.resume) {
          return ctx.delegateAll(["a1", "a2", "a3"].map((id) => ({ to: "role:worker", payload: { id }, correlationId: id })), { state: { seen: [] } });
        }
        const { reply, state, outstanding } = work.resume;
        const seen = [...(state as { seen: string[] }).seen, reply.correlationId];
        // The second reply triggers a second fan-out while a3 is still out.
        if (reply.correlationId === "a2") {
          return ctx.delegateAll(["b1", "b2"].map((id) => ({ to: "role:worker", payload: { id }, correlationId: id })), { state: { seen } });
        }
        return outstanding.length > 0 ? ctx.awaitMore({ seen }) : { seen };
      }),
    );
    workers.start("worker", async (work) => {
      const { id } = work.input as { id: string };
      await gates.wait(id);
      return { id };
    });

    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "more" });
    // Each delegate answers only once the orchestrator has taken the previous reply, so the order is chosen here.
    for (const [index, id] of ["a1", "a2", "b1", "a3", "b2"].entries()) {
      await waitFor(async () => turns.length === index + 1, { what: `turn ${index + 1} of the orchestrator` });
      gates.open(id);
    }
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.find((s) => s.id === "orch")!.output).toEqual({ seen: ["a1", "a2", "b1", "a3", "b2"] });

    const resumed = inStartOrder(turns).slice(1);
    expect(resumed.map((t) => [t.reply!.correlationId, t.outstanding])).toEqual([
      ["a1", ["a2", "a3"]],
      ["a2", ["a3"]],
      // After the second fan-out: the one left from the first, then the new ones, in the order they were asked.
      ["b1", ["a3", "b2"]],
      ["a3", ["b2"]],
      ["b2", []],
    ]);
    expectSerial(turns);
    expectStateCarried(turns);
    expect(delegationSteps(task.steps).map((s) => s.id)).toEqual(["orch.d1", "orch.d2", "orch.d3", "orch.d4", "orch.d5"]);
    const audit = await auditOf(rt.pool, taskId);
    expect(audit.filter((a) => a.action === "query" && a.rule === "builtin:query")).toHaveLength(5);
    expect(rowsOf(audit, "sub_query")).toHaveLength(5);
    expect(rowsOf(audit, "reply")).toEqual(Array(5).fill("orch:allow"));
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  /**
   * An orchestrator satisfied by its first answer (role:fast) while two role:late delegates are still out; they
   * answer only once `lateMayAnswer` holds. `extraSteps` go into the workflow next to the orchestrator.
   */
  async function finishEarly(extraSteps: string, lateMayAnswer: (taskId: string) => Promise<boolean>) {
    await submit(rt.pool, `
name: early
steps:
  - { id: orch, to: "role:orch" }
${extraSteps}`);
    const turns: TurnRecord[] = [];
    const lateRan: string[] = [];
    workers.start(
      "orch",
      recordTurns(turns, async (work, ctx) => {
        if (!work.resume) {
          return ctx.delegateAll([
            { to: "role:fast", payload: {}, correlationId: "fast" },
            { to: "role:late", payload: { n: 1 }, correlationId: "late1" },
            { to: "role:late", payload: { n: 2 }, correlationId: "late2" },
          ]);
        }
        // Satisfied by the first answer: the step completes with two replies still to come.
        return { firstAnswer: await ctx.readResult(work.resume.reply.resultRef), stillOut: work.resume.outstanding };
      }),
    );
    workers.start("fast", () => ({ quick: true }));
    const late = workers.start("late", async (work) => {
      await waitFor(() => lateMayAnswer(work.taskId), { what: "the late delegates' cue" });
      lateRan.push(JSON.stringify(work.input));
      return { late: work.input };
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "early" });
    return { taskId, turns, lateRan, late };
  }

  async function stepStatus(taskId: string, stepId: string): Promise<string | undefined> {
    const { rows } = await rt.pool.query<{ status: string }>("SELECT status FROM steps WHERE task_id = $1 AND step_id = $2", [taskId, stepId]);
    return rows[0]?.status;
  }

  it("orphans the replies still out when the orchestrator's final output completes the task", async () => {
    // The late delegates answer only after the task completed.
    const { taskId, turns, lateRan, late } = await finishEarly("", async (id) => (await rt.tasks.get(ORG, id)).status === "completed");
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.find((s) => s.id === "orch")!.output).toEqual({ firstAnswer: { quick: true }, stillOut: ["late1", "late2"] });
    // The core closes the task's open delegations as it completes: cancelled, their replies orphaned at once.
    expect(delegationSteps(task.steps).map((s) => `${s.id}:${s.status}`)).toEqual(["orch.d1:completed", "orch.d2:cancelled", "orch.d3:cancelled"]);
    const audit = await auditOf(rt.pool, taskId);
    const replies = audit.filter((a) => a.action === "reply");
    expect(replies.map((a) => `${a.stepId}:${a.verdict}`)).toEqual(["orch:allow", "orch.d2:orphaned", "orch.d3:orphaned"]);
    expect(replies.slice(1).map((a) => a.rule)).toEqual(["builtin:orphan", "builtin:orphan"]);
    expect(await counterTotal(rt.metrics.orphanReplies)).toBe(2);

    // The late work still runs; its results, arriving for an ended task, change nothing and crash nothing.
    await waitFor(async () => late.stats.completed === 2 || undefined, { what: "the late delegates to answer" });
    await waitFor(async () => (await rt.bus.stats(COORDINATOR_STREAM, COORDINATOR_GROUP)).pending === 0 || undefined, { what: "the coordinator inbox to drain" });
    expect(lateRan.sort()).toEqual([JSON.stringify({ n: 1 }), JSON.stringify({ n: 2 })]);
    const after = await rt.tasks.get(ORG, taskId);
    expect(after.status).toBe("completed");
    expect(delegationSteps(after.steps).map((s) => s.status)).toEqual(["completed", "cancelled", "cancelled"]);
    expect(await auditOf(rt.pool, taskId)).toHaveLength(audit.length);
    expect(turns).toHaveLength(2);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("records replies that arrive after the orchestrator finished (task still open) as orphans; the delegates' work is recorded", async () => {
    // A second workflow step keeps the task open until both late delegates have completed.
    const { taskId, turns, lateRan } = await finishEarly(
      `  - { id: hold, to: "role:hold" }\n`,
      async (id) => (await stepStatus(id, "orch")) === "completed",
    );
    workers.start("hold", async (work) => {
      await waitFor(async () => (await stepStatus(work.taskId, "orch.d2")) === "completed" && (await stepStatus(work.taskId, "orch.d3")) === "completed", { what: "the late delegates to complete" });
      return { held: true };
    });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.find((s) => s.id === "orch")!.output).toEqual({ firstAnswer: { quick: true }, stillOut: ["late1", "late2"] });
    expect(delegationSteps(task.steps).map((s) => [s.id, s.status, s.output])).toEqual([
      ["orch.d1", "completed", { quick: true }],
      ["orch.d2", "completed", { late: { n: 1 } }],
      ["orch.d3", "completed", { late: { n: 2 } }],
    ]);
    expect(lateRan.sort()).toEqual([JSON.stringify({ n: 1 }), JSON.stringify({ n: 2 })]);
    expect(turns).toHaveLength(2);

    const audit = await auditOf(rt.pool, taskId);
    const replies = audit.filter((a) => a.action === "reply");
    expect(replies.map((a) => `${a.stepId}:${a.verdict}`).sort()).toEqual(["orch.d2:orphaned", "orch.d3:orphaned", "orch:allow"]);
    expect(replies.filter((a) => a.verdict === "orphaned").every((a) => a.rule === "builtin:orphan")).toBe(true);
    // Each orphan row comes after its delegate's result: recorded when the reply arrived.
    for (const stepId of ["orch.d2", "orch.d3"]) {
      const result = audit.find((a) => a.action === "result" && a.stepId === stepId)!;
      expect(replies.find((a) => a.stepId === stepId)!.seq).toBeGreaterThan(result.seq);
    }
    expect(await counterTotal(rt.metrics.orphanReplies)).toBe(2);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });
});
