/**
 * Folding a task's audit rows into step attempts (pure): the outcomes the integration tests do not reach —
 * a timeout then a retry, a denied hop, a denied approval, a cancelled task — and rows of other kinds ignored.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { foldAttempts, type AuditStepRow } from "../../src/gateway/step-history.js";

let seq = 0;
function row(stepId: string, action: string, verdict: string, extra: Partial<AuditStepRow> = {}): AuditStepRow {
  seq++;
  return { seq, action, actor: "coordinator", destination: "role:w", verdict, rule: "r", reason: `${action}-${verdict}`, cost: 0, stepId, atMs: seq * 1000, ...extra };
}

describe("foldAttempts", () => {
  beforeEach(() => {
    seq = 0;
  });

  it("a timed-out attempt, then a retry that completes, with costs", () => {
    const attempts = foldAttempts([row("s", "dispatch", "allow", { cost: 1 }), row("s", "timeout", "failed"), row("s", "dispatch", "allow", { cost: 1 }), row("s", "result", "accepted", { cost: 0.5 })]).get("s")!;
    expect(attempts.map((a) => [a.attempt, a.outcome, a.cost, a.dispatchedAtMs, a.finishedAtMs])).toEqual([
      [1, "timed_out", 1, 1000, 2000],
      [2, "completed", 1.5, 3000, 4000],
    ]);
    expect(attempts[0]!.reason).toBe("timeout-failed");
  });

  it("a denied hop ends at once; a denied approval ends the waiting attempt", () => {
    const steps = foldAttempts([
      row("a", "dispatch", "deny"),
      row("b", "a2a_egress", "requires_approval"),
      row("b", "approval", "denied", { actor: "bob (apikey:x)" }),
    ]);
    expect(steps.get("a")![0]).toMatchObject({ outcome: "denied", verdict: "deny" });
    expect(steps.get("a")![0]!.finishedAtMs).not.toBeNull();
    expect(steps.get("b")).toHaveLength(1);
    expect(steps.get("b")![0]).toMatchObject({ outcome: "denied", approvedBy: "bob (apikey:x)", action: "a2a_egress" });
  });

  it("an approved hop continues its attempt; a cancel ends every open attempt; other rows change nothing", () => {
    const steps = foldAttempts([
      row("g", "dispatch", "requires_approval"),
      row("g", "approval", "approved", { actor: "ann" }),
      row("g", "dispatch", "allow", { cost: 2 }),
      row("g", "query", "allow"),
      row("h", "dispatch", "allow"),
      row("", "cancel", "cancelled"),
      row("g", "result", "accepted"),
    ]);
    expect(steps.get("g")).toHaveLength(1);
    expect(steps.get("g")![0]).toMatchObject({ attempt: 1, outcome: "cancelled", approvedBy: "ann", verdict: "allow", cost: 2, dispatchedAtMs: 3000 });
    expect(steps.get("h")![0]).toMatchObject({ outcome: "cancelled" });
  });
});
