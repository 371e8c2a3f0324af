import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ACTION_TYPES, type HopFacts } from "../../src/domain.js";
import { BUILTIN_DEFAULT_POLICY } from "../../src/governance/default-policy.js";
import { evaluate } from "../../src/governance/governor.js";
import { compilePolicy } from "../../src/governance/policy.js";

function hop(overrides: Partial<HopFacts> = {}): HopFacts {
  return {
    action: "dispatch",
    orgId: "acme",
    taskId: "task-1",
    stepId: "draft",
    workflow: "publish@1",
    destination: { kind: "role", id: "writer" },
    clearance: 0,
    cost: 1,
    taskCost: 0,
    taskBudget: null,
    approvalHint: false,
    delegationDepth: 0,
    tenantDailyCost: 0,
    tenantDailyBudget: null,
    egressEnabled: true,
    ...overrides,
  };
}

describe("governor rules", () => {
  const policy = compilePolicy(`
default: deny
rules:
  - id: no-interns-publishing
    action: dispatch
    destination: ["role:publish*", "team:press"]
    when: hop.clearance >= 1
    verdict: deny
    reason: too sensitive
  - id: approve-publish
    action: dispatch
    destination: "role:publish*"
    when: "hop.cost > 5.0 || hop.approval_hint"
    verdict: requires_approval
    reason: publishing needs a human
  - id: publish
    destination: "role:publish*"
    verdict: allow
    reason: cheap publishing
  - id: writers
    action: [dispatch, sub_query]
    destination: "role:writer"
    verdict: allow
    reason: writers write
`);

  it("takes the first matching rule", () => {
    const publisher = { kind: "role", id: "publisher" } as const;
    expect(evaluate(policy, hop({ destination: publisher, clearance: 2, cost: 9 }))).toEqual({
      verdict: "deny",
      rule: "no-interns-publishing",
      reason: "too sensitive",
    });
    expect(evaluate(policy, hop({ destination: publisher, cost: 9 }))).toEqual({
      verdict: "requires_approval",
      rule: "approve-publish",
      reason: "publishing needs a human",
    });
    expect(evaluate(policy, hop({ destination: publisher, approvalHint: true })).rule).toBe("approve-publish");
    expect(evaluate(policy, hop({ destination: publisher, cost: 2 })).rule).toBe("publish");
    // `publish` has no action filter: a sub-query to a publisher is allowed by it, not by approve-publish.
    expect(evaluate(policy, hop({ action: "sub_query", destination: publisher, cost: 9 })).rule).toBe("publish");
  });

  it("matches actions and destination globs exactly", () => {
    expect(evaluate(policy, hop({ action: "sub_query" })).rule).toBe("writers");
    expect(evaluate(policy, hop({ action: "reply" }))).toMatchObject({ verdict: "deny", rule: "builtin:default" });
    expect(evaluate(policy, hop({ destination: { kind: "team", id: "press" }, clearance: 1 })).rule).toBe("no-interns-publishing");
    expect(evaluate(policy, hop({ destination: { kind: "role", id: "writers" } })).rule).toBe("builtin:default");
    expect(evaluate(policy, hop({ destination: { kind: "team", id: "publisher" } })).rule).toBe("builtin:default");
  });

  it("falls back to the default verdict", () => {
    const verdict = evaluate(policy, hop({ destination: { kind: "role", id: "nobody" } }));
    expect(verdict).toEqual({ verdict: "deny", rule: "builtin:default", reason: "no rule matched; the policy default is deny" });
  });

  it("fails closed when a condition errors at run time", () => {
    const risky = compilePolicy({
      rules: [
        { id: "near-budget", when: "hop.task_cost > hop.task_budget * 0.8", verdict: "requires_approval", reason: "x" },
        { id: "rest", verdict: "allow", reason: "y" },
      ],
    });
    const unbounded = evaluate(risky, hop({ taskBudget: null }));
    expect(unbounded.verdict).toBe("deny");
    expect(unbounded.rule).toBe("near-budget");
    expect(unbounded.reason).toMatch(/^condition error: .*overload/);
    expect(evaluate(risky, hop({ taskCost: 9, taskBudget: 100 }))).toMatchObject({ verdict: "allow", rule: "rest" });
    expect(evaluate(risky, hop({ taskCost: 90, cost: 1, taskBudget: 100 }))).toMatchObject({ verdict: "requires_approval" });

    const divide = compilePolicy({ rules: [{ id: "ratio", when: "hop.clearance / hop.delegation_depth > 1", verdict: "allow", reason: "x" }] });
    expect(evaluate(divide, hop({ clearance: 4, delegationDepth: 2 }))).toMatchObject({ verdict: "allow", rule: "ratio" });
    expect(evaluate(divide, hop({ delegationDepth: 0 }))).toEqual({ verdict: "deny", rule: "ratio", reason: expect.stringMatching(/^condition error: .*divide by zero/) });
  });

  it("denies a condition that yields a non-boolean at run time", () => {
    const odd = compilePolicy({ rules: [{ id: "odd", when: "hop.task_budget == null ? true : hop.task_budget", verdict: "allow", reason: "x" }] });
    expect(evaluate(odd, hop())).toMatchObject({ verdict: "allow", rule: "odd" });
    expect(evaluate(odd, hop({ taskBudget: 50 }))).toEqual({ verdict: "deny", rule: "odd", reason: "condition error: the condition yielded number, not a boolean" });
  });

  it("sees every documented hop field in CEL", () => {
    const all = compilePolicy({
      rules: [
        {
          id: "all-fields",
          when: `hop.action == 'sub_query' && hop.org_id == 'acme' && hop.task_id == 'task-1' && hop.step_id == 'draft'
                 && hop.workflow == 'publish@1' && hop.destination == 'team:press' && hop.destination_kind == 'team'
                 && hop.destination_id == 'press' && hop.clearance == 2 && hop.cost == 1.5 && hop.task_cost == 3.25
                 && hop.task_budget == 10.0 && hop.approval_hint && hop.delegation_depth == 3`,
          verdict: "deny",
          reason: "all seen",
        },
      ],
    });
    const facts = hop({ action: "sub_query", destination: { kind: "team", id: "press" }, clearance: 2, cost: 1.5, taskCost: 3.25, taskBudget: 10, approvalHint: true, delegationDepth: 3 });
    expect(evaluate(all, facts).rule).toBe("all-fields");
    expect(evaluate(all, { ...facts, delegationDepth: 2 }).rule).toBe("builtin:default");
  });
});

describe("governor built-in guards", () => {
  it("denies a hop whose clearance floor exceeds the most specific ceiling", () => {
    const policy = compilePolicy({
      clearance: { "role:*": 5, "role:intern": 1, "role:intern*": 3, "team:*": 3, "*": 9 },
      rules: [{ id: "deny-all", verdict: "deny", reason: "only guards should decide first" }],
    });
    const intern = { kind: "role", id: "intern" } as const;
    expect(evaluate(policy, hop({ destination: intern, clearance: 2 }))).toEqual({
      verdict: "deny",
      rule: "builtin:clearance",
      reason: 'clearance floor 2 exceeds the ceiling 1 of role:intern (clearance "role:intern")',
    });
    expect(evaluate(policy, hop({ destination: intern, clearance: 1 })).rule).toBe("deny-all");
    expect(evaluate(policy, hop({ destination: { kind: "role", id: "intern2" }, clearance: 3 })).rule).toBe("deny-all");
    expect(evaluate(policy, hop({ destination: { kind: "role", id: "intern2" }, clearance: 4 })).rule).toBe("builtin:clearance");
    expect(evaluate(policy, hop({ destination: { kind: "role", id: "editor" }, clearance: 6 })).rule).toBe("builtin:clearance");
    expect(evaluate(policy, hop({ destination: { kind: "team", id: "ops" }, clearance: 4 })).reason).toMatch(/ceiling 3 of team:ops/);
    expect(evaluate(policy, hop({ destination: { kind: "foreign", id: "vendor" }, clearance: 9 })).rule).toBe("deny-all");
    expect(evaluate(policy, hop({ destination: { kind: "foreign", id: "vendor" }, clearance: 10 })).rule).toBe("builtin:clearance");
  });

  it("picks the same ceiling whatever the key order (jsonb does not keep it)", () => {
    const a = compilePolicy({ clearance: { "role:a*": 4, "role:*b": 2 } });
    const b = compilePolicy({ clearance: { "role:*b": 2, "role:a*": 4 } });
    const facts = hop({ destination: { kind: "role", id: "ab" }, clearance: 3 });
    // Equally specific: the lower ceiling wins, so both deny.
    expect(evaluate(a, facts)).toEqual(evaluate(b, facts));
    expect(evaluate(a, facts).rule).toBe("builtin:clearance");
  });

  it("guards the task budget before tenant rules, with the policy's over_budget verdict", () => {
    const allowAll = compilePolicy({ rules: [{ id: "yes", verdict: "allow", reason: "fine" }] });
    expect(evaluate(allowAll, hop({ taskCost: 9, cost: 2, taskBudget: 10 }))).toEqual({
      verdict: "deny",
      rule: "builtin:budget",
      reason: "task cost 9 + hop cost 2 exceeds the task budget 10",
    });
    expect(evaluate(allowAll, hop({ taskCost: 8, cost: 2, taskBudget: 10 })).rule).toBe("yes");
    expect(evaluate(allowAll, hop({ taskCost: 1e9, cost: 2, taskBudget: null })).rule).toBe("yes");
    // Binary-float noise is not overspend: 0.1 + 0.2 fits a budget of 0.3.
    expect(evaluate(allowAll, hop({ taskCost: 0.1, cost: 0.2, taskBudget: 0.3 })).rule).toBe("yes");
    expect(evaluate(allowAll, hop({ taskCost: 0.1, cost: 0.2000001, taskBudget: 0.3 })).rule).toBe("builtin:budget");

    const approve = compilePolicy({ over_budget: "requires_approval" });
    expect(evaluate(approve, hop({ taskCost: 10, cost: 1, taskBudget: 10 }))).toMatchObject({ verdict: "requires_approval", rule: "builtin:budget" });
  });

  it("checks clearance before the budget", () => {
    const policy = compilePolicy({ clearance: { "role:writer": 0 } });
    expect(evaluate(policy, hop({ clearance: 1, taskCost: 100, taskBudget: 1 })).rule).toBe("builtin:clearance");
  });

  it("denies hop facts it cannot judge instead of letting NaN through", () => {
    const allowAll = compilePolicy({});
    expect(evaluate(allowAll, hop({ cost: Number.NaN, taskBudget: 10 }))).toMatchObject({ verdict: "deny", rule: "builtin:invalid-hop" });
    expect(evaluate(allowAll, hop({ taskCost: -1 }))).toMatchObject({ verdict: "deny", rule: "builtin:invalid-hop" });
    expect(evaluate(allowAll, hop({ taskBudget: Number.POSITIVE_INFINITY }))).toMatchObject({ verdict: "deny", rule: "builtin:invalid-hop" });
  });
});

describe("built-in default policy", () => {
  it("allows FOREIGN egress (the dispatcher checks the registry) and origin replies (REPLY_ENABLED is the gate), asks for approval on hinted steps, allows the rest", () => {
    const foreign = evaluate(BUILTIN_DEFAULT_POLICY, hop({ action: "a2a_egress", destination: { kind: "foreign", id: "vendor" } }));
    expect(foreign).toMatchObject({ verdict: "allow", rule: "builtin:default" });
    expect(evaluate(BUILTIN_DEFAULT_POLICY, hop({ action: "a2a_egress", approvalHint: true }))).toMatchObject({ verdict: "requires_approval", rule: "builtin:approval-hint" });
    // The tenant's egress switch still comes first.
    expect(evaluate(BUILTIN_DEFAULT_POLICY, hop({ action: "a2a_egress", egressEnabled: false }))).toMatchObject({ verdict: "deny", rule: "builtin:egress-disabled" });
    expect(evaluate(BUILTIN_DEFAULT_POLICY, hop({ action: "origin_reply" }))).toMatchObject({ verdict: "allow", rule: "builtin:default" });
    expect(evaluate(BUILTIN_DEFAULT_POLICY, hop({ approvalHint: true }))).toMatchObject({ verdict: "requires_approval", rule: "builtin:approval-hint" });
    for (const action of ["dispatch", "sub_query", "reply"] as const) {
      expect(evaluate(BUILTIN_DEFAULT_POLICY, hop({ action }))).toMatchObject({ verdict: "allow", rule: "builtin:default" });
    }
    expect(evaluate(BUILTIN_DEFAULT_POLICY, hop({ taskCost: 5, cost: 1, taskBudget: 5 }))).toMatchObject({ verdict: "deny", rule: "builtin:budget" });
  });

  it("is shared, so it cannot be changed by accident", () => {
    expect(() => {
      (BUILTIN_DEFAULT_POLICY.document.rules as unknown as unknown[]).pop();
    }).toThrow(TypeError);
    expect(() => {
      (BUILTIN_DEFAULT_POLICY.rules[0] as { verdict: string }).verdict = "allow";
    }).toThrow(TypeError);
    expect(BUILTIN_DEFAULT_POLICY.rules.map((r) => r.id)).toEqual(["builtin:approval-hint"]);
  });
});

describe("governor determinism", () => {
  const policy = compilePolicy(`
clearance: { "role:intern": 1, "team:*": 3 }
over_budget: requires_approval
rules:
  - { id: r1, action: sub_query, when: "hop.delegation_depth > 2", verdict: deny, reason: deep }
  - { id: r2, destination: "role:pub*", when: "hop.cost > 5.0 || hop.approval_hint", verdict: requires_approval, reason: pub }
  - { id: r3, when: "hop.task_cost / hop.task_budget > 0.5", verdict: deny, reason: half }
`);
  const hopArb = fc.record({
    action: fc.constantFrom(...ACTION_TYPES),
    orgId: fc.constantFrom("acme", "globex"),
    taskId: fc.string(),
    stepId: fc.string(),
    workflow: fc.string(),
    destination: fc.record({ kind: fc.constantFrom("role", "team", "foreign"), id: fc.constantFrom("intern", "publisher", "ops", "x") }),
    clearance: fc.nat(5),
    cost: fc.double({ min: 0, max: 20, noNaN: true }),
    taskCost: fc.double({ min: 0, max: 100, noNaN: true }),
    taskBudget: fc.option(fc.double({ min: 0, max: 100, noNaN: true })),
    approvalHint: fc.boolean(),
    delegationDepth: fc.nat(10),
  }) as fc.Arbitrary<HopFacts>;

  it("gives the same verdict for the same input, whatever was evaluated before", () => {
    fc.assert(
      fc.property(hopArb, fc.array(hopArb, { maxLength: 5 }), (facts, noise) => {
        const first = evaluate(policy, facts);
        for (const other of noise) evaluate(policy, other);
        expect(evaluate(policy, structuredClone(facts))).toEqual(first);
        expect(["allow", "deny", "requires_approval"]).toContain(first.verdict);
      }),
      { numRuns: 200 },
    );
  });

  describe("tenant facts", () => {
    const allowAll = compilePolicy({ default: "allow", rules: [] });
    it("denies a2a_egress while egress is switched off for the tenant, whatever the rules say", () => {
      expect(evaluate(allowAll, hop({ action: "a2a_egress", destination: { kind: "foreign", id: "x" }, egressEnabled: false }))).toMatchObject({
        verdict: "deny",
        rule: "builtin:egress-disabled",
      });
      expect(evaluate(allowAll, hop({ action: "a2a_egress", destination: { kind: "foreign", id: "x" }, egressEnabled: true })).verdict).toBe("allow");
      expect(evaluate(allowAll, hop({ egressEnabled: false })).verdict).toBe("allow");
    });

    it("applies the policy's over_budget verdict past the tenant's daily budget", () => {
      expect(evaluate(allowAll, hop({ cost: 2, tenantDailyCost: 9, tenantDailyBudget: 10 }))).toMatchObject({ verdict: "deny", rule: "builtin:daily-budget" });
      expect(evaluate(allowAll, hop({ cost: 1, tenantDailyCost: 9, tenantDailyBudget: 10 })).verdict).toBe("allow");
      const approve = compilePolicy({ over_budget: "requires_approval", rules: [] });
      expect(evaluate(approve, hop({ cost: 2, tenantDailyCost: 9, tenantDailyBudget: 10 })).verdict).toBe("requires_approval");
      // a hop that costs nothing is never stopped by the daily budget
      expect(evaluate(allowAll, hop({ cost: 0, tenantDailyCost: 11, tenantDailyBudget: 10 })).verdict).toBe("allow");
    });

    it("exposes tenant facts to CEL conditions", () => {
      const policy = compilePolicy({ rules: [{ id: "r", when: "hop.tenant_daily_budget != null && hop.tenant_daily_cost > 5.0", verdict: "requires_approval", reason: "busy day" }] });
      expect(evaluate(policy, hop({ tenantDailyCost: 6, tenantDailyBudget: 100 })).verdict).toBe("requires_approval");
      expect(evaluate(policy, hop({ tenantDailyCost: 1, tenantDailyBudget: 100 })).verdict).toBe("allow");
    });
  });
});
