/**
 * Property tests of the decision function: random schedules of results, failures, delegations, timeouts,
 * approvals, duplicates and stale deliveries.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decide } from "../../src/core/decide.js";
import { TERMINAL_STEP_STATUSES, TERMINAL_TASK_STATUSES, type CoordinatorEvent, type Effect, type StepStatus, type TaskState, type TaskStatus } from "../../src/core/model.js";
import { STEP_TRANSITIONS, TASK_TRANSITIONS } from "../../src/core/transitions.js";
import type { HopFacts, Verdict } from "../../src/domain.js";
import { chain, context, initialState, stepDef } from "./decide-fixtures.js";

const workflow = chain(
  stepDef("a", "role:one", { retries: 2, timeoutMs: 50, costEstimate: 2 }),
  stepDef("b", "role:two", { retries: 1, timeoutMs: 50, costEstimate: 1 }),
  stepDef("c", "role:three", { needs: ["a"], timeoutMs: 50, costEstimate: 0.5 }),
  stepDef("d", "role:four", { needs: ["b", "c"], retries: 1, timeoutMs: 50, costEstimate: 3 }),
);

function governor(approvals: boolean) {
  return (hop: HopFacts): Verdict =>
    approvals && hop.stepId === "b" && hop.action === "dispatch"
      ? { verdict: "requires_approval", rule: "human", reason: "check" }
      : { verdict: "allow", rule: "ok", reason: "ok" };
}

interface Trace {
  state: TaskState;
  log: Array<{ event: CoordinatorEvent; ignored?: string; effects: Effect[]; status: string; before: TaskState; after: TaskState }>;
}

/** Candidate events the outside world could deliver next, given the state and what was delivered before. */
function candidates(state: TaskState, delivered: CoordinatorEvent[], now: number): Array<{ event: CoordinatorEvent; at: number }> {
  const out: Array<{ event: CoordinatorEvent; at: number }> = [];
  for (const step of state.steps.values()) {
    const key = `${step.stepId}-${step.attempt}`;
    const sender = { kind: "queue" as const, endpoint: step.destination };
    if (step.status === "dispatched") {
      out.push({ at: now, event: { type: "result", eventId: `ok-${key}`, stepId: step.stepId, attempt: step.attempt, sender, ok: true, output: { step: step.stepId }, error: null, cost: 1.25, payloadHash: "h" } });
      out.push({ at: now, event: { type: "result", eventId: `err-${key}`, stepId: step.stepId, attempt: step.attempt, sender, ok: false, output: null, error: { code: "HANDLER_FAILED", message: "x", retryable: true }, cost: 0.25, payloadHash: "h" } });
      // A RESULT naming another turn than the step's current one is stale (a redelivered entry run again).
      out.push({ at: now, event: { type: "result", eventId: `old-${key}-${step.turns}`, stepId: step.stepId, attempt: step.attempt, sender, turn: step.turns + 1, ok: true, output: { stale: true }, error: null, cost: 9, payloadHash: "h" } });
      if (step.depth < 2) {
        const ask = (n: number) => ({ destination: "role:helper", correlationId: `c-${key}-${step.turns}-${n}`, query: { n } });
        const stand = { originStepId: step.stepId, originAttempt: step.attempt, sender, depth: step.depth, turn: step.turns, cost: 0.125 };
        out.push({ at: now, event: { type: "query", eventId: `q-${key}-${step.turns}`, ...stand, queries: [ask(1)], state: { s: 1 } } });
        out.push({ at: now, event: { type: "query", eventId: `fan-${key}-${step.turns}`, ...stand, queries: [ask(1), ask(2), ask(3)], state: { s: 3 } } });
        out.push({ at: now, event: { type: "query", eventId: `more-${key}-${step.turns}`, ...stand, queries: [], state: { s: 0 } } });
      }
    }
    if (step.dueAtMs !== null) out.push({ at: Math.max(now, step.dueAtMs), event: { type: "step_due", eventId: `due-${key}-${step.dueAtMs}`, stepId: step.stepId, attempt: step.attempt } });
    if (step.status === "parked" && step.approvalId) {
      out.push({ at: now, event: { type: "approval_decided", eventId: `ap-${step.approvalId}`, approvalId: step.approvalId, approve: true, actor: "user:a", reason: "" } });
      out.push({ at: now, event: { type: "approval_decided", eventId: `dn-${step.approvalId}`, approvalId: step.approvalId, approve: false, actor: "user:b", reason: "" } });
    }
  }
  for (const event of delivered) out.push({ at: now, event }); // duplicates and stale redeliveries
  if (delivered.length > 3) out.push({ at: now, event: { type: "cancel", eventId: "cancel", actor: "user:c", reason: "" } });
  return out;
}

function simulate(choices: number[], approvals: boolean): Trace {
  let state = initialState(workflow);
  let now = 1000;
  const log: Trace["log"] = [];
  const delivered: CoordinatorEvent[] = [];
  const first = decide(state, { type: "task_started", eventId: "start" }, context(now, "start", governor(approvals)));
  state = first.state;
  log.push({ event: { type: "task_started", eventId: "start" }, effects: first.effects, status: state.task.status, before: initialState(workflow), after: state });
  for (const choice of choices) {
    const options = candidates(state, delivered, now);
    if (options.length === 0) break;
    const pick = options[choice % options.length]!;
    now = pick.at + 1;
    const before = state;
    const decision = decide(state, pick.event, context(now, pick.event.eventId, governor(approvals)));
    state = decision.state;
    delivered.push(pick.event);
    log.push({ event: pick.event, ignored: decision.ignored, effects: decision.effects, status: state.task.status, before, after: state });
  }
  return { state, log };
}

const schedule = fc.tuple(fc.array(fc.nat({ max: 10_000 }), { minLength: 1, maxLength: 80 }), fc.boolean());

describe("decide (properties)", () => {
  it("is deterministic: the same schedule yields the same state and effects", () => {
    fc.assert(
      fc.property(schedule, ([choices, approvals]) => {
        const one = simulate(choices, approvals);
        const two = simulate(choices, approvals);
        expect(JSON.stringify(two.log)).toBe(JSON.stringify(one.log));
        expect(JSON.stringify([...two.state.steps.values()])).toBe(JSON.stringify([...one.state.steps.values()]));
      }),
      { numRuns: 200 },
    );
  });

  it("never applies a transition twice, whatever is duplicated or reordered", () => {
    fc.assert(
      fc.property(schedule, ([choices, approvals]) => {
        const { log } = simulate(choices, approvals);
        const applied = new Set<string>();
        for (const entry of log) {
          if (entry.ignored === undefined) {
            expect(applied.has(entry.event.eventId), `event ${entry.event.eventId} applied twice`).toBe(false);
            applied.add(entry.event.eventId);
          } else {
            expect(entry.effects.filter((e) => e.type !== "count")).toEqual([]);
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it("accepts at most one successful result per step, sends nothing after the task ends, and keeps cost consistent", () => {
    fc.assert(
      fc.property(schedule, ([choices, approvals]) => {
        const { log, state } = simulate(choices, approvals);
        const accepted = new Map<string, number>();
        let ended = false;
        for (const entry of log) {
          for (const effect of entry.effects) {
            if (effect.type === "audit" && effect.entry.action === "result" && effect.entry.verdict === "accepted") {
              accepted.set(effect.entry.stepId, (accepted.get(effect.entry.stepId) ?? 0) + 1);
            }
            if (ended) expect(effect.type === "send" || effect.type === "open_approval").toBe(false);
          }
          ended = ["completed", "failed", "cancelled"].includes(entry.status);
        }
        for (const count of accepted.values()) expect(count).toBe(1);
        const sum = [...state.steps.values()].reduce((total, s) => total + s.cost, 0);
        expect(state.task.cost).toBeCloseTo(sum, 6);
        expect(state.task.cost).toBeGreaterThanOrEqual(-1e-9);
        if (state.task.status === "completed") {
          for (const def of workflow.steps) expect(state.steps.get(def.id)!.status).toBe("completed");
        }
      }),
      { numRuns: 300 },
    );
  });

  it("hands an origin its replies one at a time: never while a turn of it runs, each reply once", () => {
    // Proof the schedules reach the cases: replies sent, and replies that queued behind a running turn.
    const seen = { replies: 0, queued: 0 };
    fc.assert(
      fc.property(schedule, ([choices, approvals]) => {
        const { log } = simulate(choices, approvals);
        const delivered = new Set<string>();
        for (const entry of log) {
          const replies = entry.effects.flatMap((e) => (e.type === "send" && e.envelope.kind === "REPLY" ? [e.envelope] : []));
          const origins = replies.map((r) => r.stepId);
          expect(new Set(origins).size, "two REPLYs to one origin in one decision").toBe(origins.length);
          for (const reply of replies) {
            const standsDown = entry.event.type === "query" && entry.event.originStepId === reply.stepId;
            expect(entry.before.steps.get(reply.stepId)!.status === "dispatched" && !standsDown, `REPLY to ${reply.stepId} while a turn of it runs`).toBe(false);
            expect(delivered.has(reply.sourceStepId!), `reply of ${reply.sourceStepId} delivered twice`).toBe(false);
            delivered.add(reply.sourceStepId!);
            seen.replies++;
            if (standsDown) seen.queued++;
          }
        }
      }),
      // More runs than the others: a reply queued behind a running turn needs a long schedule (about one run in 40).
      { numRuns: 1000 },
    );
    expect(seen.replies).toBeGreaterThan(100);
    expect(seen.queued).toBeGreaterThan(0);
  });

  it("changes a status only along the transition table (src/core/transitions.ts), and never a final one", () => {
    // One decision may take several rows (stood down, then its queued reply dispatched): what it changes must be
    // reachable through the table. Which changes the schedules reached is counted, to show they reach the machine.
    const seen = new Set<string>();
    fc.assert(
      fc.property(schedule, ([choices, approvals]) => {
        for (const entry of simulate(choices, approvals).log) {
          const before = entry.before;
          const after = entry.after;
          expect(TERMINAL_TASK_STATUSES.includes(before.task.status) && after.task.status !== before.task.status, "a final task status changed").toBe(false);
          if (after.task.status !== before.task.status) {
            expect(reachable(TASK_TRANSITIONS, before.task.status, after.task.status), `task ${before.task.status} → ${after.task.status}`).toBe(true);
          }
          for (const [stepId, step] of after.steps) {
            const was = before.steps.get(stepId);
            if (!was) {
              expect(step.status === "pending" || reachable(STEP_TRANSITIONS, "pending", step.status), `a new step starts ${step.status}`).toBe(true);
              continue;
            }
            if (was.status === step.status) continue;
            expect(TERMINAL_STEP_STATUSES.includes(was.status), `step ${stepId} left final ${was.status}`).toBe(false);
            expect(reachable(STEP_TRANSITIONS, was.status, step.status), `step ${stepId} ${was.status} → ${step.status}`).toBe(true);
            seen.add(`${was.status}→${step.status}`);
          }
        }
      }),
      { numRuns: 300 },
    );
    for (const pair of ["pending→dispatched", "dispatched→completed", "dispatched→retrying", "dispatched→waiting", "parked→dispatched", "parked→failed", "pending→parked"]) {
      expect(seen, `the schedules never reached ${pair}`).toContain(pair);
    }
  });
});

function reachable<S extends StepStatus | TaskStatus>(table: readonly { from: S; to: S }[], from: S, to: S): boolean {
  const seen = new Set<S>([from]);
  const queue: S[] = [from];
  while (queue.length > 0) {
    const at = queue.shift()!;
    for (const row of table) {
      if (row.from !== at || seen.has(row.to)) continue;
      if (row.to === to) return true;
      seen.add(row.to);
      queue.push(row.to);
    }
  }
  return false;
}
