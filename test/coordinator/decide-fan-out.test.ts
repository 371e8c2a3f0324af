/**
 * Fan-out delegation in the decision function (issue 14): one turn asks several sub-queries, replies queue in the
 * order their results are applied and go out one at a time, only while no turn of the origin runs.
 */
import { describe, expect, it } from "vitest";
import { decide } from "../../src/core/decide.js";
import { toStep } from "../../src/store/engine/postgres-task-store.js";
import type { CoordinatorEvent, DecideContext, Effect, EnvelopeSpec, EventSender, TaskState } from "../../src/core/model.js";
import { chain, context, initialState, stepDef } from "./decide-fixtures.js";

const ORIGIN: EventSender = { kind: "queue", endpoint: "role:boss" };
const HELPER: EventSender = { kind: "queue", endpoint: "role:helper" };
const wf = chain(stepDef("a", "role:boss", { costEstimate: 2, timeoutMs: 1000 }));

function sends(effects: Effect[]): EnvelopeSpec[] {
  return effects.flatMap((e) => (e.type === "send" ? [e.envelope] : []));
}
function audits(effects: Effect[]) {
  return effects.flatMap((e) => (e.type === "audit" ? [e.entry] : []));
}

type QueryEvent = Extract<CoordinatorEvent, { type: "query" }>;
function fanOut(turn: number, ids: string[], extra: Partial<QueryEvent> = {}): CoordinatorEvent {
  return {
    type: "query",
    eventId: `q-${turn}-${ids.join("")}`,
    originStepId: "a",
    originAttempt: 1,
    sender: ORIGIN,
    queries: ids.map((id) => ({ destination: "role:helper", correlationId: id, query: { ask: id } })),
    depth: 0,
    turn,
    cost: 0.25,
    state: { turn },
    ...extra,
  };
}
function result(stepId: string, ok = true, extra: Partial<Extract<CoordinatorEvent, { type: "result" }>> = {}): CoordinatorEvent {
  const sender = stepId === "a" ? ORIGIN : HELPER;
  return { type: "result", eventId: `r-${stepId}-${ok}-${extra.turn ?? ""}`, stepId, attempt: 1, sender, ok, output: ok ? { from: stepId } : null, error: ok ? null : { code: "HANDLER_FAILED", message: "boom", retryable: false }, cost: 0.5, payloadHash: "h", ...extra };
}

class Run {
  state: TaskState;
  now = 1000;
  constructor(private readonly ctx: Partial<DecideContext> = {}) {
    this.state = decide(initialState(wf), { type: "task_started", eventId: "s" }, context(this.now, "s")).state;
  }
  apply(event: CoordinatorEvent) {
    this.now += 10;
    const d = decide(this.state, event, { ...context(this.now, event.eventId), ...this.ctx });
    this.state = d.state;
    return d;
  }
  get origin() {
    return this.state.steps.get("a")!;
  }
}

function payloadOf(envelope: EnvelopeSpec) {
  return JSON.parse(envelope.payloadJson) as { state: unknown; turn: number; outstanding: string[] };
}

describe("fan-out delegation", () => {
  it("asks every sub-query as its own governed hop and waits for all of them", () => {
    const run = new Run();
    const d = run.apply(fanOut(0, ["x", "y", "z"]));
    expect(audits(d.effects).map((a) => `${a.action}:${a.stepId}`)).toEqual([
      "query:a", "query:a", "query:a", "sub_query:a.d1", "sub_query:a.d2", "sub_query:a.d3",
    ]);
    expect(audits(d.effects)[1]!.reason).toBe("delegation to role:helper as a.d2 (2 of 3)");
    // The turn's spend is accounted once.
    expect(audits(d.effects).filter((a) => a.action === "query").map((a) => a.cost)).toEqual([0.25, 0, 0]);
    expect(sends(d.effects).map((e) => [e.stepId, e.correlationId])).toEqual([["a.d1", "x"], ["a.d2", "y"], ["a.d3", "z"]]);
    expect(run.origin).toMatchObject({ status: "waiting", turns: 1, delegations: 3 });
    expect(run.origin.checkpoint).toEqual({
      state: { turn: 0 },
      awaiting: [{ delegateStepId: "a.d1", correlationId: "x" }, { delegateStepId: "a.d2", correlationId: "y" }, { delegateStepId: "a.d3", correlationId: "z" }],
      arrived: [],
    });
  });

  it("hands replies over one at a time in arrival order, queueing those that arrive while a turn runs", () => {
    const run = new Run();
    run.apply(fanOut(0, ["x", "y", "z"]));
    // z finishes first: the waiting origin gets it at once.
    const first = sends(run.apply(result("a.d3")).effects);
    expect(first.map((e) => [e.kind, e.correlationId])).toEqual([["REPLY", "z"]]);
    expect(payloadOf(first[0]!)).toMatchObject({ state: { turn: 0 }, turn: 1, outstanding: ["x", "y"] });
    expect(run.origin.status).toBe("dispatched");
    // x then y finish while that turn runs: nothing is sent, they queue in that order.
    expect(sends(run.apply(result("a.d1", false)).effects)).toEqual([]);
    expect(sends(run.apply(result("a.d2")).effects)).toEqual([]);
    expect(run.origin.checkpoint!.arrived).toEqual(["a.d1", "a.d2"]);
    // The turn keeps waiting with a new state: the head of the queue goes out at once, with that state.
    const second = sends(run.apply(fanOut(1, [], { state: { seen: ["z"] } })).effects);
    expect(second.map((e) => [e.kind, e.correlationId, e.status])).toEqual([["REPLY", "x", "error"]]);
    expect(payloadOf(second[0]!)).toMatchObject({ state: { seen: ["z"] }, turn: 2, outstanding: ["y"] });
    const third = sends(run.apply(fanOut(2, [], { state: { seen: ["z", "x"] } })).effects);
    expect(third.map((e) => e.correlationId)).toEqual(["y"]);
    expect(payloadOf(third[0]!)).toMatchObject({ state: { seen: ["z", "x"] }, turn: 3, outstanding: [] });
    const done = run.apply(result("a", true, { turn: 3 }));
    expect(done.state.task.status).toBe("completed");
    expect(audits(done.effects).filter((a) => a.verdict === "orphaned")).toEqual([]);
  });

  it("carries a completed delegate's output in its REPLY, and only the reference when it is an error or over the cap", () => {
    const run = new Run({ maxPayloadBytes: 400 });
    run.apply(fanOut(0, ["x", "y", "z"]));
    const ok = sends(run.apply(result("a.d1")).effects)[0]!;
    expect(JSON.parse(ok.payloadJson)).toMatchObject({ result: { from: "a.d1" } });
    expect(ok.resultRef).toBe(`step:${run.state.task.id}/a.d1`);
    run.apply(result("a.d2", false));
    run.apply(result("a.d3", true, { output: { big: "é".repeat(400) } }));
    const failed = sends(run.apply(fanOut(1, [])).effects)[0]!;
    expect(failed.status).toBe("error");
    expect(Object.hasOwn(JSON.parse(failed.payloadJson), "result")).toBe(false);
    // Over the cap in UTF-8 bytes (400 two-byte characters): the REPLY goes out with the reference alone.
    const big = sends(run.apply(fanOut(2, [])).effects)[0]!;
    expect(big.correlationId).toBe("z");
    expect(Object.hasOwn(JSON.parse(big.payloadJson), "result")).toBe(false);
    expect(big.resultRef).toBe(`step:${run.state.task.id}/a.d3`);
  });

  it("refuses a stand-down or RESULT of a turn that already stood down", () => {
    const run = new Run();
    const q = fanOut(0, ["x"]);
    run.apply(q);
    run.apply(result("a.d1"));
    expect(run.apply({ ...q, eventId: "again" }).ignored).toBe("stale query");
    expect(run.apply(result("a", true, { turn: 0 })).ignored).toMatch(/older turn/);
    expect(run.origin.status).toBe("dispatched");
    expect(run.apply(result("a", true, { turn: 1 })).state.task.status).toBe("completed");
  });

  it("records replies that arrive after the origin completed as orphans, and the delegates' work as done", () => {
    const run = new Run();
    run.state = decide(initialState(chain(stepDef("a", "role:boss"), stepDef("b", "role:next"))), { type: "task_started", eventId: "s" }, context(run.now, "s")).state;
    run.apply(fanOut(0, ["x", "y", "z"]));
    run.apply(result("a.d1"));
    run.apply(result("a.d2")); // queued behind the running turn
    const done = run.apply(result("a", true, { turn: 1 }));
    expect(run.origin.status).toBe("completed");
    expect(audits(done.effects).filter((a) => a.verdict === "orphaned").map((a) => a.stepId)).toEqual(["a.d2"]);
    const late = run.apply(result("a.d3"));
    expect(sends(late.effects)).toEqual([]);
    expect(audits(late.effects)).toEqual([
      expect.objectContaining({ action: "result", verdict: "accepted", stepId: "a.d3" }),
      expect.objectContaining({ action: "reply", verdict: "orphaned", rule: "builtin:orphan", stepId: "a.d3" }),
    ]);
    expect(late.effects).toContainEqual({ type: "count", metric: "orphan_reply" });
    expect(run.state.steps.get("a.d3")!.status).toBe("completed");
    expect(run.state.task.status).toBe("running");
  });

  it("cancels the sub-queries still out when the task completes, recording their replies as orphans", () => {
    const run = new Run();
    run.apply(fanOut(0, ["x", "y"]));
    run.apply(result("a.d1"));
    const done = run.apply(result("a", true, { turn: 1 }));
    expect(done.state.task.status).toBe("completed");
    expect(audits(done.effects).filter((a) => a.verdict === "orphaned")).toEqual([
      expect.objectContaining({ stepId: "a.d2", reason: expect.stringMatching(/task completed before it replied/) }),
    ]);
    // Nothing of the ended task stays due (the sweep would fire it forever), and the late result changes nothing.
    expect(run.state.steps.get("a.d2")).toMatchObject({ status: "cancelled", dueAtMs: null });
    expect(run.apply(result("a.d2")).ignored).toBeDefined();
  });

  it("fails the step with DELEGATION_LIMIT over the outstanding cap and over the per-attempt total", () => {
    const capped = new Run({ delegationLimits: { maxOutstanding: 2, maxPerAttempt: 3 } });
    const over = capped.apply(fanOut(0, ["x", "y", "z"]));
    expect(audits(over.effects)).toEqual([expect.objectContaining({ action: "query", verdict: "denied", rule: "builtin:delegation-limit", cost: 0.25 })]);
    expect(capped.origin.error).toMatchObject({ code: "DELEGATION_LIMIT", retryable: false });
    expect(capped.origin.error!.message).toMatch(/at most 2 may be outstanding per step \(SWITCHYARD_DELEGATION_MAX_OUTSTANDING\)/);
    expect(capped.state.task).toMatchObject({ status: "failed", cost: 0.25 });

    const total = new Run({ delegationLimits: { maxOutstanding: 2, maxPerAttempt: 3 } });
    total.apply(fanOut(0, ["x", "y"]));
    total.apply(result("a.d1"));
    total.apply(result("a.d2"));
    total.apply(fanOut(1, [])); // takes y
    expect(total.apply(fanOut(2, ["v", "w"])).state.steps.get("a")!.error!.message).toMatch(/after 2 in attempt 1: at most 3 may be asked per attempt/);
  });

  it("fails a turn that keeps waiting with nothing outstanding, or repeats an outstanding correlation id", () => {
    const empty = new Run();
    empty.apply(fanOut(0, []));
    expect(empty.origin.error).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/no reply outstanding/) });
    const repeat = new Run();
    repeat.apply(fanOut(0, ["x", "y"]));
    repeat.apply(result("a.d1"));
    repeat.apply(fanOut(1, ["y"]));
    expect(repeat.origin.error).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/correlation id "y"/) });
  });

  it("times out a waiting origin into a fresh attempt whose predecessor's replies are orphans", () => {
    const run = new Run();
    const retrying = chain(stepDef("a", "role:boss", { retries: 1, timeoutMs: 1000, costEstimate: 2 }));
    run.state = decide(initialState(retrying), { type: "task_started", eventId: "s" }, context(run.now, "s")).state;
    run.apply(fanOut(0, ["x", "y"]));
    run.apply(result("a.d1")); // the origin's turn runs with x; y never comes in time
    run.now += 5000;
    const due = run.apply({ type: "step_due", eventId: "due", stepId: "a", attempt: 1 });
    expect(run.origin).toMatchObject({ status: "dispatched", attempt: 2, checkpoint: null });
    expect(audits(due.effects).map((a) => a.action)).toEqual(["timeout", "dispatch"]);
    const late = run.apply(result("a.d2"));
    expect(audits(late.effects).map((a) => a.verdict)).toEqual(["accepted", "orphaned"]);
    expect(audits(late.effects)[1]!.reason).toMatch(/origin is at attempt 2/);
  });

  it("holds the queue behind a reply parked for approval and delivers it in order once approved", () => {
    const govern = (hop: { action: string }) =>
      hop.action === "reply" ? { verdict: "requires_approval" as const, rule: "human", reason: "check" } : { verdict: "allow" as const, rule: "ok", reason: "ok" };
    const run = new Run({ govern });
    run.apply(fanOut(0, ["x", "y"]));
    run.apply(result("a.d2"));
    expect(run.origin.status).toBe("parked");
    expect(sends(run.apply(result("a.d1")).effects)).toEqual([]);
    expect(run.origin.checkpoint!.arrived).toEqual(["a.d2", "a.d1"]);
    const approved = run.apply({ type: "approval_decided", eventId: "ok", approvalId: run.origin.approvalId!, approve: true, actor: "user:a", reason: "" });
    expect(sends(approved.effects).map((e) => e.correlationId)).toEqual(["y"]);
    expect(run.origin.status).toBe("dispatched");
  });

  it("reads a single-delegation checkpoint stored before fan-out as one awaited reply", () => {
    const row = {
      task_id: "t", step_id: "a", org_id: "acme", kind: "workflow" as const, destination: "role:boss", attempt: 1, depth: 0, clearance: 0,
      due_at_ms: 5, cost: 0, output: null, error: null, approval_id: null, delegation: null, delegations: 1, turns: 1,
      checkpoint: { state: { s: 1 }, delegateStepId: "a.d1", correlationId: "c" },
    };
    expect(toStep({ ...row, status: "waiting" }).checkpoint).toEqual({ state: { s: 1 }, awaiting: [{ delegateStepId: "a.d1", correlationId: "c" }], arrived: [] });
    expect(toStep({ ...row, status: "parked" }).checkpoint!.arrived).toEqual(["a.d1"]);
  });

  it("sends no more of a fan-out once a sub-query denied at once has failed the origin, and nothing of it stays due", () => {
    const govern = (hop: { action: string; destination: { id: string } }) =>
      (hop.action === "sub_query" && hop.destination.id === "nope") || hop.action === "reply"
        ? { verdict: "deny" as const, rule: "t:no", reason: "denied" }
        : { verdict: "allow" as const, rule: "ok", reason: "ok" };
    const run = new Run({ govern });
    const d = run.apply(fanOut(0, ["x", "y"], { queries: [{ destination: "role:nope", correlationId: "x", query: {} }, { destination: "role:helper", correlationId: "y", query: {} }] }));
    expect(run.state.task.status).toBe("failed");
    expect(sends(d.effects).filter((e) => e.kind === "WORK")).toEqual([]);
    expect(run.state.steps.get("a.d2")).toMatchObject({ status: "cancelled", dueAtMs: null });
  });

  it("gives the origin's reserved estimate back when its attempt ends on a denied REPLY", () => {
    const run = new Run({ govern: (hop) => (hop.action === "reply" ? { verdict: "deny", rule: "t:no", reason: "denied" } : { verdict: "allow", rule: "ok", reason: "ok" }) });
    run.apply(fanOut(0, ["x"]));
    run.apply(result("a.d1"));
    expect(run.origin.status).toBe("failed");
    // 0.25 spent by the turn, 0.5 by the delegate; the 2 reserved for the attempt is released.
    expect(run.origin.cost).toBe(0.25);
    expect(run.state.task.cost).toBe(0.75);
  });
});
