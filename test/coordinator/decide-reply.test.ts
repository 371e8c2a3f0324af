/**
 * The reply verb's pure decisions: who may reply when (attempt, step status, the grace window after the task
 * ended), the order of refusals, cost on allow, and that the same event and facts always decide the same.
 */
import { describe, expect, it } from "vitest";
import { decide } from "../../src/core/decide.js";
import type { CoordinatorEvent, DecideContext, Effect, TaskState } from "../../src/core/model.js";
import type { ReplyRequestFacts } from "../../src/core/reply-types.js";
import { DEFAULT_REPLY_LIMITS } from "../../src/core/reply-types.js";
import { chain, context, initialState, stepDef } from "./decide-fixtures.js";

const NOW = 1_000_000;
const SLACK = { kind: "slack_thread" as const, teamId: "T0ACME", channel: "C0GEN", threadTs: "1.2" };
const FACTS: ReplyRequestFacts = { kind: "request", recordedCount: 0, duplicate: false, connection: { ok: true, connection: { id: "conn-1", kind: "slack", accountKey: "T0ACME" } }, secretRule: null, bucket: null };

/** A task whose one step `a` (role:w) is dispatched at attempt 1. */
function dispatched(): TaskState {
  const base = initialState(chain(stepDef("a", "role:w")));
  const started = decide(base, { type: "task_started", eventId: "start" }, context(NOW, "s"));
  return { ...started.state, task: { ...started.state.task, replyTo: SLACK } };
}

function resultOf(stepId: string): CoordinatorEvent {
  return { type: "result", eventId: `r-${stepId}`, stepId, attempt: 1, sender: { kind: "queue", endpoint: "role:w" }, ok: true, output: 1, error: null, cost: 0, payloadHash: "" };
}

/** `dispatched()` after its step completed: the task ended at NOW. */
function completed(): TaskState {
  const done = decide(dispatched(), resultOf("a"), context(NOW, "x")).state;
  expect(done.task.status).toBe("completed");
  return done;
}

function ctx(facts: Partial<ReplyRequestFacts> = {}, overrides: Partial<DecideContext> = {}): DecideContext {
  const base = context(NOW, "r");
  return { ...base, tenant: { ...base.tenant, replyEnabled: true }, replyLimits: { ...DEFAULT_REPLY_LIMITS, cost: 0.5 }, reply: { ...FACTS, ...facts }, ...overrides };
}

function request(overrides: Partial<Extract<CoordinatorEvent, { type: "reply_request" }>> = {}): CoordinatorEvent {
  return { type: "reply_request", eventId: "req-1", stepId: "a", attempt: 1, sender: { kind: "queue", endpoint: "role:w" }, text: "hello", idempotencyKey: "k", requestId: "req-1", ...overrides };
}

function recorded(effects: Effect[]) {
  return effects.flatMap((e) => (e.type === "record_reply" ? [e.reply] : []));
}

describe("decide: reply_request", () => {
  it("records a pending row for the step's worker, accrues the reply cost, audits without the text", () => {
    const d = decide(dispatched(), request(), ctx());
    expect(d.refused).toBeUndefined();
    expect(recorded(d.effects).map((r) => [r.state, r.connectionId, r.actor, r.stepId, r.attempt])).toEqual([["pending", "conn-1", "worker:role:w", "a", 1]]);
    expect(d.state.task.cost).toBeCloseTo(dispatched().task.cost + 0.5);
    const audit = d.effects.filter((e) => e.type === "audit");
    expect(audit).toHaveLength(1);
    expect(JSON.stringify(audit)).not.toContain("hello");
    expect(d.effects.some((e) => e.type === "reply_bucket")).toBe(true);
    // Deterministic: the same event and facts decide the same.
    expect(decide(dispatched(), request(), ctx())).toEqual(d);
  });

  it("refuses (dead-letters, no row) another queue, the gateway, and the API after the grace window", () => {
    for (const sender of [{ kind: "queue", endpoint: "role:other" }, { kind: "gateway", agent: "x" }] as const) {
      const d = decide(dispatched(), request({ sender }), ctx());
      expect(d.refused).toBeDefined();
      expect(d.effects).toEqual([]);
    }
    expect(decide(dispatched(), request({ sender: { kind: "queue", endpoint: "role:other" } }), ctx()).refused).toMatch(/destination is role:w/);
    const ended = completed();
    const api = request({ sender: { kind: "api", actor: "user:ann" }, stepId: null, attempt: 0 });
    expect(decide(ended, api, ctx()).refused).toBeUndefined();
    const late = decide(ended, api, ctx({}, { now: NOW + DEFAULT_REPLY_LIMITS.graceMs + 1 }));
    expect(late.refused).toMatch(/ended more than/);
    expect(late.effects).toEqual([]);
  });

  it("records reply_not_allowed for the step's own worker at the wrong time: stale attempt, step not in flight, grace over", () => {
    const twoSteps = (): TaskState => {
      const base = initialState(chain(stepDef("a", "role:w"), stepDef("b", "role:v")));
      const started = decide(base, { type: "task_started", eventId: "start" }, context(NOW, "s")).state;
      const aDone = decide(started, resultOf("a"), context(NOW, "x")).state;
      return { ...aDone, task: { ...aDone.task, replyTo: SLACK } };
    };
    const cases: Array<[string, TaskState, Partial<DecideContext>, RegExp]> = [
      ["stale attempt", dispatched(), {}, /attempt 1; attempt 2 was retried/],
      ["not in flight", twoSteps(), {}, /step a is completed, not in flight/],
      ["grace over", completed(), { now: NOW + DEFAULT_REPLY_LIMITS.graceMs + 1 }, /ended more than/],
    ];
    for (const [what, state, overrides, why] of cases) {
      // A recorded row with the same key does not hide the refusal behind the earlier row's outcome.
      const d = decide(state, request(what === "stale attempt" ? { attempt: 2 } : {}), ctx({ duplicate: true }, overrides));
      expect(d.refused, what).toBeUndefined();
      expect(d.ignored, what).toBeUndefined();
      const rows = recorded(d.effects);
      expect(rows.map((r) => [r.state, r.code, r.text, r.actor]), what).toEqual([["refused", "reply_not_allowed", "", "worker:role:w"]]);
      expect(rows[0]!.message, what).toMatch(why);
      const audit = d.effects.flatMap((e) => (e.type === "audit" ? [e.entry] : []));
      expect(audit.map((a) => [a.action, a.verdict, a.rule]), what).toEqual([["origin_reply", "deny", "builtin:reply_not_allowed"]]);
      // No governor, no token, no cost: nothing that could lead to a dial.
      expect(d.effects.some((e) => e.type === "hop" || e.type === "reply_bucket"), what).toBe(false);
      expect(d.state.task.cost, what).toBe(state.task.cost);
      expect(decide(state, request(what === "stale attempt" ? { attempt: 2 } : {}), ctx({ duplicate: true }, overrides)), what).toEqual(d);
    }
    // The task ended within the grace window: the step's last worker may still reply.
    expect(recorded(decide(completed(), request(), ctx()).effects).map((r) => r.state)).toEqual(["pending"]);
  });

  it("applies the refusals in order, each a refused row without the words, and takes no token", () => {
    const cases: Array<[Partial<ReplyRequestFacts>, Partial<DecideContext>, string]> = [
      [{}, { tenant: { dailyCost: 0, dailyBudget: null, egressEnabled: false, replyEnabled: false } }, "reply_disabled"],
      [{ recordedCount: 20, secretRule: "rule-x" }, {}, "task_cap_reached"],
      [{ connection: { ok: false, code: "no_connection", message: "none" }, secretRule: "rule-x" }, {}, "no_connection"],
      [{ secretRule: "@secretlint/secretlint-rule-github (GITHUB_TOKEN)" }, {}, "secret_detected"],
      [{ bucket: { tokens: 0.2, updatedAtMs: NOW } }, {}, "rate_limited"],
    ];
    for (const [facts, overrides, code] of cases) {
      const d = decide(dispatched(), request(), ctx(facts, overrides));
      expect(recorded(d.effects).map((r) => [r.state, r.code, r.text])).toEqual([["refused", code, ""]]);
      expect(d.effects.some((e) => e.type === "reply_bucket")).toBe(false);
    }
  });

  it("ignores a request whose idempotency key is recorded already", () => {
    const d = decide(dispatched(), request(), ctx({ duplicate: true }));
    expect(d.ignored).toMatch(/idempotency key/);
    expect(recorded(d.effects)).toEqual([]);
  });
});
