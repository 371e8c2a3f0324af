import { describe, expect, it } from "vitest";
import { decide } from "../../src/core/decide.js";
import type { CoordinatorEvent, Effect, EnvelopeSpec, EventSender, TaskState } from "../../src/core/model.js";
import { MAX_DELEGATION_DEPTH } from "../../src/core/model.js";
import { chain, context, initialState, stepDef } from "./decide-fixtures.js";

function sends(effects: Effect[]): EnvelopeSpec[] {
  return effects.flatMap((e) => (e.type === "send" ? [e.envelope] : []));
}
function audits(effects: Effect[]) {
  return effects.flatMap((e) => (e.type === "audit" ? [e.entry] : []));
}
/** The queue each test step is dispatched to: its worker is who may send its RESULT. */
const QUEUES: Record<string, string> = { a: "role:one", b: "role:two", c: "role:three", "a.d1": "role:helper", "a.d2": "role:helper" };
function worker(stepId: string): EventSender {
  return { kind: "queue", endpoint: QUEUES[stepId] ?? "role:x" };
}
function result(stepId: string, attempt: number, ok = true, extra: Partial<Extract<CoordinatorEvent, { type: "result" }>> = {}): CoordinatorEvent {
  return { type: "result", eventId: `r-${stepId}-${attempt}-${ok}`, stepId, attempt, sender: worker(stepId), ok, output: ok ? { from: stepId } : null, error: ok ? null : { code: "HANDLER_FAILED", message: "boom", retryable: true }, cost: 0.5, payloadHash: "h", ...extra };
}

const wf = chain(stepDef("a", "role:one"), stepDef("b", "role:two"), stepDef("c", "role:three"));

function run(state: TaskState, events: CoordinatorEvent[], now = 1000) {
  let s = state;
  const effects: Effect[] = [];
  for (const [i, e] of events.entries()) {
    const d = decide(s, e, context(now + i, e.eventId));
    s = d.state;
    effects.push(...d.effects);
  }
  return { state: s, effects };
}

describe("decide", () => {
  it("starts by dispatching the first step only, governed and audited", () => {
    const d = decide(initialState(wf), { type: "task_started", eventId: "start" }, context(1000, "start"));
    const out = sends(d.effects);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ kind: "WORK", stepId: "a", attempt: 1, destination: "role:one" });
    expect(JSON.parse(out[0]!.payloadJson)).toEqual({ input: { task: { topic: "x" }, steps: {} }, turn: 0 });
    expect(audits(d.effects)).toEqual([expect.objectContaining({ action: "dispatch", verdict: "allow", stepId: "a", cost: 1 })]);
    expect(d.state.steps.get("a")).toMatchObject({ status: "dispatched", attempt: 1, dueAtMs: 2000 });
    expect(d.state.task.cost).toBe(1);
  });

  it("passes needed outputs downstream and completes the task after the last result", () => {
    const { state, effects } = run(initialState(wf), [{ type: "task_started", eventId: "s" }, result("a", 1), result("b", 1), result("c", 1)]);
    expect(state.task.status).toBe("completed");
    const b = sends(effects).find((e) => e.stepId === "b")!;
    expect(JSON.parse(b.payloadJson).input.steps).toEqual({ a: { from: "a" } });
    // estimate 1 per step replaced by actual 0.5 per step
    expect(state.task.cost).toBeCloseTo(1.5);
    expect(audits(effects).map((a) => a.action)).toEqual(["dispatch", "result", "dispatch", "result", "dispatch", "result"]);
  });

  it("ignores a duplicate or stale result", () => {
    const started = run(initialState(wf), [{ type: "task_started", eventId: "s" }, result("a", 1)]).state;
    const dup = decide(started, result("a", 1), context(2000, "dup"));
    expect(dup.ignored).toBe("stale result");
    expect(dup.state).toBe(started);
    const stale = decide(started, result("b", 7), context(2000, "stale"));
    expect(stale.ignored).toBeDefined();
  });

  it("retries a retryable failure after backoff, then fails the task when attempts run out", () => {
    const w = chain(stepDef("a", "role:one", { retries: 1, backoffMs: 100 }), stepDef("b", "role:two"));
    let { state } = run(initialState(w), [{ type: "task_started", eventId: "s" }, result("a", 1, false)]);
    expect(state.steps.get("a")).toMatchObject({ status: "retrying", dueAtMs: 1001 + 100 });
    const early = decide(state, { type: "step_due", eventId: "d0", stepId: "a", attempt: 1 }, context(1050, "d0"));
    expect(early.ignored).toBe("not due");
    const due = decide(state, { type: "step_due", eventId: "d1", stepId: "a", attempt: 1 }, context(1200, "d1"));
    expect(sends(due.effects)[0]).toMatchObject({ stepId: "a", attempt: 2 });
    state = decide(due.state, result("a", 2, false), context(1300, "f2")).state;
    expect(state.task.status).toBe("failed");
    expect(state.task.error).toMatchObject({ stepId: "a", code: "HANDLER_FAILED" });
    expect(state.steps.get("b")!.status).toBe("cancelled");
  });

  it("does not retry a non-retryable failure", () => {
    const w = chain(stepDef("a", "role:one", { retries: 3 }));
    const { state } = run(initialState(w), [
      { type: "task_started", eventId: "s" },
      result("a", 1, false, { error: { code: "INVALID_ARGUMENT", message: "bad", retryable: false } }),
    ]);
    expect(state.task.status).toBe("failed");
    expect(state.steps.get("a")!.attempt).toBe(1);
  });

  it("times out a silent attempt, releases its estimate and re-dispatches a new attempt", () => {
    const w = chain(stepDef("a", "role:one", { retries: 1, timeoutMs: 500 }));
    const { state } = run(initialState(w), [{ type: "task_started", eventId: "s" }]);
    const d = decide(state, { type: "step_due", eventId: "t", stepId: "a", attempt: 1 }, context(5000, "t"));
    expect(audits(d.effects).map((a) => a.action)).toEqual(["timeout", "dispatch"]);
    expect(d.state.steps.get("a")).toMatchObject({ status: "dispatched", attempt: 2 });
    expect(d.state.task.cost).toBe(1);
    // the late result of attempt 1 is stale
    expect(decide(d.state, result("a", 1), context(5001, "late")).ignored).toBe("stale result");
  });

  it("never re-sends a timed-out or failed FOREIGN hop unless the tenant registered the agent idempotent", () => {
    const w = chain(stepDef("a", "foreign:helper", { retries: 2, timeoutMs: 500 }));
    const { state } = run(initialState(w), [{ type: "task_started", eventId: "s" }]);
    const foreignSends = (effects: Effect[]) => effects.filter((e) => e.type === "foreign_dispatch");
    const due: CoordinatorEvent = { type: "step_due", eventId: "t", stepId: "a", attempt: 1 };
    const d = decide(state, due, context(5000, "t"));
    expect(audits(d.effects).map((a) => `${a.action}:${a.verdict}`)).toEqual(["timeout:failed"]);
    expect(foreignSends(d.effects)).toHaveLength(0);
    expect(d.state.steps.get("a")).toMatchObject({ status: "failed", attempt: 1, error: { code: "FOREIGN_NOT_RETRIED", retryable: false } });
    expect(d.state.task.error).toMatchObject({ stepId: "a", code: "FOREIGN_NOT_RETRIED" });
    // A retryable failure result is not re-sent either.
    // (A FOREIGN step's result comes from the gateway, for its agent.)
    const failed = result("a", 1, false, { sender: { kind: "gateway", agent: "helper" } });
    expect(decide(state, failed, context(1100, "f")).state.steps.get("a")).toMatchObject({ status: "failed", attempt: 1 });
    // The idempotent fact comes in through the context: then the step's retries apply.
    const base = context(5000, "t");
    const idempotent = { ...base, tenant: { ...base.tenant, idempotentForeignAgents: new Set(["helper"]) } };
    const again = decide(state, due, idempotent);
    expect(foreignSends(again.effects)).toHaveLength(1);
    expect(again.state.steps.get("a")).toMatchObject({ status: "dispatched", attempt: 2 });
    // Another agent's flag does not count.
    const other = { ...base, tenant: { ...base.tenant, idempotentForeignAgents: new Set(["helper2"]) } };
    expect(decide(state, due, other).state.steps.get("a")!.status).toBe("failed");
  });

  describe("a FOREIGN hop that failed", () => {
    const w = chain(stepDef("a", "foreign:helper", { retries: 2, timeoutMs: 500 }));
    const started = run(initialState(w), [{ type: "task_started", eventId: "s" }]).state;
    const fromGateway = { kind: "gateway", agent: "helper" } as const;
    const agentFailed = (attempt: number, error: { code: string; message: string; retryable: boolean }) =>
      result("a", attempt, false, { eventId: `a2a:b${attempt}:final`, sender: fromGateway, error });
    const notSent = (attempt: number, retryable = true) =>
      result("a", attempt, false, {
        eventId: `a2a:b${attempt}:not-sent`,
        sender: fromGateway,
        undelivered: true,
        error: { code: "FOREIGN_SEND_FAILED", message: "could not open a task at foreign agent helper (CARD_UNREACHABLE): connect ECONNREFUSED", retryable },
        cost: 0,
      });
    const foreignSends = (effects: Effect[]) => effects.filter((e) => e.type === "foreign_dispatch");
    const idempotent = (now: number, id: string) => {
      const base = context(now, id);
      return { ...base, tenant: { ...base.tenant, idempotentForeignAgents: new Set(["helper"]) } };
    };

    it("with a retryable error is not re-sent and fails as FOREIGN_NOT_RETRIED (a foreign dead letter), the agent's error in the message", () => {
      const d = decide(started, agentFailed(1, { code: "FOREIGN_FAILED", message: "foreign agent helper failed the task: quota", retryable: true }), context(1100, "f"));
      expect(foreignSends(d.effects)).toHaveLength(0);
      const step = d.state.steps.get("a")!;
      expect(step).toMatchObject({ status: "failed", attempt: 1, error: { code: "FOREIGN_NOT_RETRIED", retryable: false } });
      expect(step.error!.message).toContain("FOREIGN_FAILED: foreign agent helper failed the task: quota");
      expect(step.error!.message).toContain("not re-sent (retries: 2)");
      expect(d.state.task.error).toMatchObject({ stepId: "a", code: "FOREIGN_NOT_RETRIED" });
      // The result itself is audited with the agent's own error.
      expect(audits(d.effects)).toContainEqual(expect.objectContaining({ action: "result", verdict: "failed", actor: "foreign:helper", reason: "FOREIGN_FAILED: foreign agent helper failed the task: quota" }));
    });

    it("keeps its own error when it was not retryable, when the step has no retries, or when the agent is idempotent (then it is retried)", () => {
      const rejected = decide(started, agentFailed(1, { code: "FOREIGN_REJECTED", message: "no", retryable: false }), context(1100, "f"));
      expect(rejected.state.steps.get("a")!.error).toMatchObject({ code: "FOREIGN_REJECTED" });
      const once = run(initialState(chain(stepDef("a", "foreign:helper", { retries: 0 }))), [{ type: "task_started", eventId: "s" }]).state;
      expect(decide(once, agentFailed(1, { code: "FOREIGN_FAILED", message: "x", retryable: true }), context(1100, "f")).state.steps.get("a")!.error).toMatchObject({ code: "FOREIGN_FAILED" });
      const retried = decide(started, agentFailed(1, { code: "FOREIGN_FAILED", message: "x", retryable: true }), idempotent(1100, "f"));
      expect(retried.state.steps.get("a")).toMatchObject({ status: "retrying", attempt: 1 });
    });

    it("before anything was sent is re-sent within the step's retries, even to an agent not registered idempotent", () => {
      let state = started;
      for (const attempt of [1, 2]) {
        const failed = decide(state, notSent(attempt), context(1100 * attempt, `n${attempt}`));
        expect(failed.state.steps.get("a"), `attempt ${attempt}`).toMatchObject({ status: "retrying", attempt });
        const due = decide(failed.state, { type: "step_due", eventId: `d${attempt}`, stepId: "a", attempt }, context(10_000 * attempt, `d${attempt}`));
        expect(foreignSends(due.effects), `attempt ${attempt}`).toHaveLength(1);
        expect(due.state.steps.get("a")).toMatchObject({ status: "dispatched", attempt: attempt + 1 });
        state = due.state;
      }
      // Retries used up: the step fails with the send's own error; nothing was sent, so there is no dead letter.
      const last = decide(state, notSent(3), context(40_000, "n3"));
      expect(last.state.steps.get("a")).toMatchObject({ status: "failed", attempt: 3, error: { code: "FOREIGN_SEND_FAILED" } });
      // A send that can never pass (egress switched off, agent disabled) is not retried.
      expect(decide(started, notSent(1, false), context(1100, "n")).state.steps.get("a")).toMatchObject({ status: "failed", error: { code: "FOREIGN_SEND_FAILED" } });
      // Without the undelivered fact, the same error is a failed hop that may have reached the agent: not re-sent.
      const maybeSent = result("a", 1, false, { eventId: "a2a:b1:send-failed", sender: fromGateway, error: { code: "FOREIGN_SEND_FAILED", message: "timed out", retryable: true } });
      expect(decide(started, maybeSent, context(1100, "m")).state.steps.get("a")).toMatchObject({ status: "failed", error: { code: "FOREIGN_NOT_RETRIED" } });
    });
  });

  it("denies fail the step closed with the rule in the error", () => {
    const d = decide(initialState(wf), { type: "task_started", eventId: "s" }, context(1, "s", () => ({ verdict: "deny", rule: "no-one", reason: "closed" })));
    expect(sends(d.effects)).toHaveLength(0);
    expect(d.state.task.status).toBe("failed");
    expect(d.state.steps.get("a")!.error).toMatchObject({ code: "POLICY_DENIED" });
    expect(audits(d.effects)[0]).toMatchObject({ verdict: "deny", rule: "no-one", cost: 0 });
  });

  it("parks on requires_approval and resumes exactly once on approval", () => {
    const govern = (hop: { stepId: string }) =>
      hop.stepId === "b" ? { verdict: "requires_approval" as const, rule: "human", reason: "check" } : { verdict: "allow" as const, rule: "ok", reason: "ok" };
    let s = run(initialState(wf), [{ type: "task_started", eventId: "s" }]).state;
    const parked = decide(s, result("a", 1), context(10, "ra", govern));
    const approval = parked.effects.find((e) => e.type === "open_approval");
    expect(approval).toBeDefined();
    expect(parked.state.task.status).toBe("parked");
    expect(sends(parked.effects)).toHaveLength(0);
    const approvalId = approval!.type === "open_approval" ? approval!.approval.id : "";
    const approved = decide(parked.state, { type: "approval_decided", eventId: "ap", approvalId, approve: true, actor: "user:ann", reason: "" }, context(20, "ap", govern));
    expect(sends(approved.effects)).toEqual([expect.objectContaining({ stepId: "b", attempt: 1 })]);
    expect(audits(approved.effects).map((a) => [a.action, a.verdict])).toEqual([["approval", "approved"], ["dispatch", "allow"]]);
    expect(approved.state.task.status).toBe("running");
    const again = decide(approved.state, { type: "approval_decided", eventId: "ap2", approvalId, approve: false, actor: "user:bob", reason: "" }, context(30, "ap2", govern));
    expect(again.ignored).toBe("approval is not pending");
    s = approved.state;
    expect(s.steps.get("b")!.status).toBe("dispatched");
  });

  it("an approval does not override a deny that holds when it is decided (e.g. egress switched off meanwhile)", () => {
    let denyNow = false;
    const govern = () =>
      denyNow ? { verdict: "deny" as const, rule: "builtin:egress-disabled", reason: "egress off" } : { verdict: "requires_approval" as const, rule: "human", reason: "check" };
    const parked = decide(initialState(wf), { type: "task_started", eventId: "s" }, context(1, "s", govern));
    const approvalId = parked.state.steps.get("a")!.approvalId!;
    denyNow = true;
    const approved = decide(parked.state, { type: "approval_decided", eventId: "ap", approvalId, approve: true, actor: "user:ann", reason: "" }, context(2, "ap", govern));
    expect(sends(approved.effects)).toHaveLength(0);
    expect(approved.state.task.status).toBe("failed");
    expect(audits(approved.effects).map((a) => [a.action, a.verdict, a.rule])).toEqual([
      ["approval", "approved", `approval:${approvalId}`],
      ["dispatch", "deny", "builtin:egress-disabled"],
    ]);
  });

  it("a denied approval fails the step and the task", () => {
    const govern = () => ({ verdict: "requires_approval" as const, rule: "human", reason: "check" });
    const s = run(initialState(wf), []).state;
    const parked = decide(s, { type: "task_started", eventId: "s" }, context(1, "s", govern));
    const approvalId = parked.state.steps.get("a")!.approvalId!;
    const denied = decide(parked.state, { type: "approval_decided", eventId: "d", approvalId, approve: false, actor: "user:ann", reason: "no" }, context(2, "d", govern));
    expect(denied.state.task.status).toBe("failed");
    expect(denied.state.steps.get("a")!.error!.message).toContain("user:ann");
  });

  it("oversize step input fails closed before anything is sent", () => {
    const big = { blob: "x".repeat(2000) };
    const ctx = { ...context(1, "s"), maxPayloadBytes: 1000 };
    const d = decide(initialState(wf, big), { type: "task_started", eventId: "s" }, ctx);
    expect(sends(d.effects)).toHaveLength(0);
    expect(d.state.steps.get("a")!.error!.code).toBe("PAYLOAD_TOO_LARGE");
    expect(audits(d.effects)[0]).toMatchObject({ verdict: "deny", rule: "builtin:payload-size" });
  });

  it("cancel closes open steps and approvals, and later results are stale", () => {
    const s = run(initialState(wf), [{ type: "task_started", eventId: "s" }]).state;
    const c = decide(s, { type: "cancel", eventId: "c", actor: "user:ann", reason: "stop" }, context(5, "c"));
    expect(c.state.task.status).toBe("cancelled");
    expect(c.state.steps.get("a")!.status).toBe("cancelled");
    expect(c.state.task.cost).toBe(0);
    expect(decide(c.state, result("a", 1), context(6, "r")).ignored).toBeDefined();
  });

  describe("delegation", () => {
    function query(depth = 0, extra: Partial<Extract<CoordinatorEvent, { type: "query" }>> = {}): CoordinatorEvent {
      return { type: "query", eventId: `q${depth}`, originStepId: "a", originAttempt: 1, sender: worker("a"), queries: [{ destination: "role:helper", correlationId: "corr-1", query: { ask: 1 } }], depth, turn: 0, cost: 0.5, state: { turn: 1 }, ...extra };
    }

    it("governs the QUERY as sub_query, parks the origin and replies with the result and its reference on completion", () => {
      const s = run(initialState(wf), [{ type: "task_started", eventId: "s" }]).state;
      const q = decide(s, query(), context(10, "q"));
      expect(q.state.steps.get("a")).toMatchObject({ status: "waiting", checkpoint: { state: { turn: 1 }, awaiting: [{ delegateStepId: "a.d1", correlationId: "corr-1" }], arrived: [] } });
      const work = sends(q.effects)[0]!;
      expect(work).toMatchObject({ kind: "WORK", stepId: "a.d1", destination: "role:helper", delegationDepth: 1, correlationId: "corr-1" });
      expect(JSON.parse(work.payloadJson)).toEqual({ input: { ask: 1 }, turn: 0 });
      expect(audits(q.effects).map((a) => a.action)).toEqual(["query", "sub_query"]);

      const r = decide(q.state, result("a.d1", 1), context(20, "rd"));
      const reply = sends(r.effects)[0]!;
      expect(reply).toMatchObject({ kind: "REPLY", stepId: "a", attempt: 1, status: "ok", correlationId: "corr-1", delegationDepth: 1, sourceStepId: "a.d1", resultRef: `step:${s.task.id}/a.d1` });
      // The output travels with its reference, so the origin's worker needs no store to read it (issue 27 §3).
      expect(JSON.parse(reply.payloadJson)).toEqual({ input: { task: { topic: "x" }, steps: {} }, state: { turn: 1 }, depth: 0, turn: 1, outstanding: [], result: { from: "a.d1" } });
      expect(r.state.steps.get("a")!.status).toBe("dispatched");
      // the origin then finishes normally
      const done = decide(r.state, result("a", 1), context(30, "ra"));
      expect(done.state.steps.get("a")!.status).toBe("completed");
    });

    it("replies on delegate failure too", () => {
      const s = run(initialState(wf), [{ type: "task_started", eventId: "s" }, query()]).state;
      const r = decide(s, result("a.d1", 1, false), context(20, "rd"));
      expect(sends(r.effects)[0]).toMatchObject({ kind: "REPLY", status: "error", error: { code: "HANDLER_FAILED" } });
      expect(r.state.task.status).toBe("running");
    });

    it(`delivers no reply at depth >= ${MAX_DELEGATION_DEPTH} but still records the delegate's work`, () => {
      // The origin's own work is at the ceiling (it is itself delegated work, MAX levels down): that record counts.
      const atDepth = (depth: number): TaskState => {
        const started = run(initialState(wf), [{ type: "task_started", eventId: "s" }]).state;
        return { ...started, steps: new Map(started.steps).set("a", { ...started.steps.get("a")!, depth }) };
      };
      const s = run(atDepth(MAX_DELEGATION_DEPTH), [query()]).state;
      const r = decide(s, result("a.d1", 1), context(20, "rd"));
      expect(sends(r.effects)).toHaveLength(0);
      expect(r.state.steps.get("a.d1")!.status).toBe("completed");
      expect(r.effects).toContainEqual({ type: "count", metric: "delegation_depth_exceeded" });
      const below = run(atDepth(MAX_DELEGATION_DEPTH - 1), [query()]).state;
      expect(sends(decide(below, result("a.d1", 1), context(20, "rd")).effects)).toHaveLength(1);
    });

    it(`refuses a sub-query from work past the ceiling (depth > ${MAX_DELEGATION_DEPTH}): audited denial, the step fails DELEGATION_DEPTH`, () => {
      const started = run(initialState(wf), [{ type: "task_started", eventId: "s" }]).state;
      // Depth comes from our record of the step; the QUERY carries none the decision reads.
      const s = { ...started, steps: new Map(started.steps).set("a", { ...started.steps.get("a")!, depth: MAX_DELEGATION_DEPTH + 1 }) };
      const r = decide(s, query(), context(20, "q"));
      expect(r.state.steps.get("a")).toMatchObject({ status: "failed", error: { code: "DELEGATION_DEPTH", retryable: false } });
      expect(r.state.steps.has("a.d1")).toBe(false);
      expect(sends(r.effects).filter((e) => e.kind === "WORK")).toHaveLength(0);
      expect(audits(r.effects)).toContainEqual(expect.objectContaining({ action: "query", verdict: "denied", rule: "builtin:delegation-depth", stepId: "a" }));
    });

    it("an origin that moved on (timed out and re-dispatched) gets no reply and nothing crashes", () => {
      const w = chain(stepDef("a", "role:one", { retries: 1, timeoutMs: 100 }));
      let s = run(initialState(w), [{ type: "task_started", eventId: "s" }, query()]).state;
      s = decide(s, { type: "step_due", eventId: "t", stepId: "a", attempt: 1 }, context(10_000, "t")).state;
      expect(s.steps.get("a")).toMatchObject({ status: "dispatched", attempt: 2 });
      const r = decide(s, result("a.d1", 1), context(10_001, "rd"));
      expect(sends(r.effects)).toHaveLength(0);
      expect(r.effects).toContainEqual({ type: "count", metric: "orphan_reply" });
    });

    it("a duplicate QUERY creates no second delegation, even after the origin resumed", () => {
      const s = run(initialState(wf), [{ type: "task_started", eventId: "s" }, query()]).state;
      expect(decide(s, query(), context(11, "q")).ignored).toBe("stale query");
      const resumed = decide(s, result("a.d1", 1), context(12, "rd")).state;
      expect(resumed.steps.get("a")!.status).toBe("dispatched");
      expect(decide(resumed, query(), context(13, "q")).ignored).toBe("stale query");
      // the resumed turn may delegate again (turn 1)
      expect(decide(resumed, query(0, { eventId: "q-next", turn: 1 }), context(14, "q2")).state.steps.get("a.d2")).toBeDefined();
    });
  });

  describe("who may touch a step", () => {
    const started = () => run(initialState(wf), [{ type: "task_started", eventId: "s" }]).state;

    it("refuses a RESULT whose sender is not the step's destination, and changes nothing", () => {
      const s = started();
      for (const sender of [{ kind: "queue", endpoint: "role:two" }, { kind: "gateway", agent: "one" }] as EventSender[]) {
        const d = decide(s, result("a", 1, true, { sender }), context(10, "forged"));
        expect(d.refused).toMatch(/whose destination is role:one/);
        expect(d.state).toBe(s);
        expect(d.effects).toEqual([]);
      }
      const genuine = decide(s, result("a", 1), context(10, "genuine"));
      expect(genuine.refused).toBeUndefined();
      expect(audits(genuine.effects)[0]).toMatchObject({ action: "result", actor: "worker:role:one" });
    });

    it("a FOREIGN step's RESULT is accepted only from the gateway for that agent, audited with the step's agent", () => {
      const w = chain(stepDef("f", "foreign:checker"));
      const s = run(initialState(w), [{ type: "task_started", eventId: "s" }]).state;
      expect(s.steps.get("f")!.status).toBe("dispatched");
      expect(decide(s, result("f", 1, true, { sender: { kind: "queue", endpoint: "role:one" } }), context(10, "x")).refused).toMatch(/callback route or the sweep/);
      expect(decide(s, result("f", 1, true, { sender: { kind: "gateway", agent: "nobody" } }), context(10, "x")).refused).toMatch(/destination is foreign:checker/);
      const ok = decide(s, result("f", 1, true, { sender: { kind: "gateway", agent: "checker" } }), context(10, "x"));
      expect(ok.refused).toBeUndefined();
      expect(audits(ok.effects)[0]).toMatchObject({ action: "result", actor: "foreign:checker" });
    });

    it("a FOREIGN step's heartbeat (an MCP tool's progress) is accepted only from the gateway for that agent, for the current attempt", () => {
      const w = chain(stepDef("f", "foreign:checker", { timeoutMs: 1_000 }), stepDef("r", "role:one"));
      const s = run(initialState({ ...w, steps: w.steps.map((d) => ({ ...d, needs: [] })) }), [{ type: "task_started", eventId: "s" }]).state;
      const due = s.steps.get("f")!.dueAtMs;
      const beat = (stepId: string, sender: EventSender, attempt = 1) => decide(s, { type: "heartbeat", eventId: "h", stepId, attempt, sender }, context(700, "h"));
      // A worker cannot keep a FOREIGN step alive; the gateway cannot for a role step, nor for another agent's step.
      expect(beat("f", { kind: "queue", endpoint: "role:one" }).refused).toMatch(/^heartbeat from role:one for step f, a FOREIGN step \(foreign:checker\)/);
      expect(beat("r", { kind: "gateway", agent: "checker" }).refused).toMatch(/heartbeat from the gateway \(for foreign:checker\) for step r, whose destination is role:one/);
      expect(beat("f", { kind: "gateway", agent: "nobody" }).refused).toMatch(/destination is foreign:checker/);
      // The gateway for the step's own agent, an old attempt: not applied.
      const stale = beat("f", { kind: "gateway", agent: "checker" }, 0);
      expect(stale.refused).toBeUndefined();
      expect(stale.ignored).toBe("not in flight");
      expect(stale.state.steps.get("f")!.dueAtMs).toBe(due);
      // And for the current attempt: the due time moves to now + the step's timeout, nothing audited.
      const ok = beat("f", { kind: "gateway", agent: "checker" });
      expect(ok.refused).toBeUndefined();
      expect(ok.ignored).toBeUndefined();
      expect(ok.state.steps.get("f")!.dueAtMs).toBe(700 + 1_000);
      expect(due).not.toBe(700 + 1_000);
      expect(audits(ok.effects)).toEqual([]);
    });

    it("refuses a QUERY or heartbeat from another queue than the origin's, and a RESULT for a step the task lacks", () => {
      const s = started();
      const q = decide(s, { type: "query", eventId: "q", originStepId: "a", originAttempt: 1, sender: worker("b"), queries: [{ destination: "role:helper", correlationId: "c", query: null }], depth: 0, turn: 0, cost: 0, state: null }, context(10, "q"));
      expect(q.refused).toMatch(/QUERY from role:two for step a/);
      const hb = decide(s, { type: "heartbeat", eventId: "h", stepId: "a", attempt: 1, sender: worker("b") }, context(500, "h"));
      expect(hb.refused).toMatch(/heartbeat from role:two/);
      expect(hb.state.steps.get("a")!.dueAtMs).toBe(s.steps.get("a")!.dueAtMs);
      expect(decide(s, result("zz", 1), context(10, "z")).refused).toMatch(/does not have/);
    });

    it("takes the delegation depth from the origin's record, not from the QUERY", () => {
      const s = run(initialState(wf), [{ type: "task_started", eventId: "s" }]).state;
      const forged = { type: "query", eventId: "q8", originStepId: "a", originAttempt: 1, sender: worker("a"), queries: [{ destination: "role:helper", correlationId: "c", query: null }], depth: MAX_DELEGATION_DEPTH, turn: 0, cost: 0, state: null } as const;
      const q = decide(s, forged, context(10, "q8"));
      expect(q.state.steps.get("a.d1")).toMatchObject({ depth: 1, delegation: expect.objectContaining({ queryDepth: 0 }) });
      const r = decide(q.state, result("a.d1", 1), context(20, "rd"));
      expect(sends(r.effects)).toEqual([expect.objectContaining({ kind: "REPLY", stepId: "a", delegationDepth: 1 })]);
    });
  });
});
