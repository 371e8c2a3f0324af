/**
 * A tenant's CEL condition cannot stall the governor: expensive conditions are refused when stored (naming the
 * rule and the limit), and one that gets past that check — stored before the limits existed — is stopped by the
 * per-evaluation budget and denies (fail closed) within a measured bound.
 */
import { describe, expect, it } from "vitest";
import type { HopFacts } from "../../src/domain.js";
import { ErrorCode, isSwitchyardError } from "../../src/errors.js";
import { evaluate } from "../../src/governance/governor.js";
import { compilePolicy, type CompilePolicyOptions } from "../../src/governance/policy.js";

const hop = (overrides: Partial<HopFacts> = {}): HopFacts => ({
  action: "a2a_egress",
  orgId: "acme",
  taskId: "0b7c4f5e-1d2a-4c3b-9e8f-7a6b5c4d3e2f",
  stepId: "fetch",
  workflow: "report@3",
  destination: { kind: "foreign", id: "weather" },
  tenantDailyCost: 0,
  tenantDailyBudget: null,
  egressEnabled: true,
  clearance: 0,
  cost: 1,
  taskCost: 0,
  taskBudget: null,
  approvalHint: false,
  delegationDepth: 0,
  ...overrides,
});

const range = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(", ")}]`;

/**
 * The shape of the reported rule (~1.5 KB): nested `exists` over list literals, guarded so that the probe hop the
 * store-time check evaluates (a `dispatch`) never reaches the expensive part. Unbounded, one a2a_egress hop costs
 * 60^5 ≈ 8·10^8 iterations.
 */
const PATHOLOGICAL = `hop.action != "dispatch" && ${range(60)}.exists(a, ${range(60)}.exists(b, ${range(60)}.exists(c, ${range(60)}.exists(d, ${range(60)}.exists(e, a + b + c + d + e == -1)))))`;

const policyWith = (when: string, verdict = "allow") => ({
  default: "allow",
  rules: [{ id: "slow-rule", action: ["a2a_egress"], when, verdict, reason: "tenant rule" }],
});

function refusal(when: string, options?: CompilePolicyOptions) {
  try {
    compilePolicy(policyWith(when), options);
  } catch (error) {
    if (isSwitchyardError(error)) return error;
    throw error;
  }
  throw new Error("the policy was accepted");
}

/**
 * Runs `fn` five times: `ms` is the fastest run (robust to a loaded machine's pauses), `worst` the slowest. Unbounded,
 * the evaluations below take minutes; bounded, milliseconds.
 */
function timed<T>(fn: () => T): { value: T; ms: number; worst: number } {
  let value!: T;
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    value = fn();
    runs.push(performance.now() - start);
  }
  return { value, ms: Math.min(...runs), worst: Math.max(...runs) };
}

describe("CEL cost limits", () => {
  it("refuses the pathological rule at store time, naming the rule and the limit", () => {
    expect(PATHOLOGICAL.length).toBeGreaterThan(1_000);
    const { value: error, ms } = timed(() => refusal(PATHOLOGICAL));
    // The store-time check itself evaluates the probe hop: it must not be the stall either.
    expect(error.code).toBe(ErrorCode.InvalidPolicy);
    expect(error.details.path).toBe("rules[0].when");
    expect(error.message).toMatch(/rule 'slow-rule'/);
    expect(error.message).toMatch(/nests 5 comprehensions .* at most 2 are allowed \(limit maxComprehensionNesting\)/);
    expect(ms).toBeLessThan(500);
  });

  it.each([
    ["a list literal over the size limit", `${range(65)}.exists(x, x == 1)`, "maxLiteralElements"],
    ["a map literal over the size limit", `{${Array.from({ length: 65 }, (_, i) => `"k${i}": ${i}`).join(", ")}}.size() > 0`, "maxLiteralElements"],
    ["too many nodes", Array.from({ length: 800 }, () => "1<2").join("||"), "maxNodes"],
    ["too deep", `hop.cost${" + 1.0".repeat(40)} > 0.0`, "maxDepth"],
    [
      "two nested loops whose estimated cost is too high",
      `${range(64)}.exists(a, ${range(64)}.exists(b, a * b == 7 && a + b == 8 && a - b == 6 && hop.cost > 1.0))`,
      "maxEstimatedCost",
    ],
    ["a loop over a string that may be 16 KiB long", `hop.destination_id.replace("a", "bb").split("").exists(c, c.split("").exists(d, d == "x"))`, "maxEstimatedCost"],
  ])("refuses %s", (_what, when, limit) => {
    const error = refusal(when);
    expect(error.code).toBe(ErrorCode.InvalidPolicy);
    expect(error.message).toContain(`(limit ${limit})`);
    expect(error.message).toMatch(/rule 'slow-rule'/);
  });

  it("a policy that slipped past the store-time check (stored earlier) is stopped by the budget and denies, quickly", () => {
    const policy = compilePolicy(policyWith(PATHOLOGICAL), { enforceStoreLimits: false });
    // The probe hop (dispatch) skips the loops; an egress hop runs into them.
    expect(evaluate(policy, hop({ action: "dispatch" })).verdict).toBe("allow");
    const { value: verdict, ms, worst } = timed(() => evaluate(policy, hop()));
    expect(verdict).toMatchObject({ verdict: "deny", rule: "slow-rule" });
    expect(verdict.reason).toMatch(/exceeded its evaluation budget of 50000 steps/);
    expect(ms).toBeLessThan(100);
    expect(worst).toBeLessThan(2_000);
    // And every later evaluation stays bounded (no state carried over).
    for (let i = 0; i < 20; i++) expect(evaluate(policy, hop()).verdict).toBe("deny");
  });

  it("denies even when the expression would absorb the failure (error || true)", () => {
    const when = `${range(40)}.exists(a, ${range(40)}.exists(b, ${range(40)}.exists(c, a + b + c == -1))) || true`;
    const policy = compilePolicy(policyWith(when, "allow"), { enforceStoreLimits: false });
    const { value: verdict, ms } = timed(() => evaluate(policy, hop()));
    expect(verdict).toMatchObject({ verdict: "deny", rule: "slow-rule" });
    expect(verdict.reason).toMatch(/evaluation budget/);
    expect(ms).toBeLessThan(100);
  });

  it("refuses string results that outgrow the cap (replace chains grow 8x per call)", () => {
    const when = `hop.destination_id${'.replace("a", "aaaaaaaa")'.repeat(12)}.size() > 0`;
    const policy = compilePolicy(policyWith(when), { enforceStoreLimits: false });
    const { value: verdict, ms } = timed(() => evaluate(policy, hop({ destination: { kind: "foreign", id: "aaaa" } })));
    expect(verdict).toMatchObject({ verdict: "deny", rule: "slow-rule" });
    expect(verdict.reason).toMatch(/exceed 16384 characters/);
    expect(ms).toBeLessThan(100);
  });

  it("charges scans of long strings: contains over a 2 KiB string in a loop runs out of budget", () => {
    const big = `hop.destination_id${'.replace("a", "aaaaaaaa")'.repeat(3)}`; // 4 * 8^3 = 2,048 characters
    const when = `[${big}].exists(s, ${range(64)}.exists(i, ${range(64)}.exists(j, s.contains("zz"))))`;
    const policy = compilePolicy(policyWith(when), { enforceStoreLimits: false });
    const { value: verdict, ms } = timed(() => evaluate(policy, hop({ destination: { kind: "foreign", id: "aaaa" } })));
    expect(verdict).toMatchObject({ verdict: "deny", reason: expect.stringMatching(/evaluation budget/) });
    expect(ms).toBeLessThan(100);
    // String concatenation is capped like the extension functions.
    const concat = compilePolicy(policyWith(`(${Array(9).fill(big).join(" + ")}).size() > 0`), { enforceStoreLimits: false });
    expect(evaluate(concat, hop({ destination: { kind: "foreign", id: "aaaa" } })).reason).toMatch(/\+: the result would exceed 16384 characters/);
  });

  describe("matches (RE2)", () => {
    const list64 = `[${Array.from({ length: 64 }, (_, i) => i).join(",")}]`;
    /** A reviewer's rule (437 characters): 4,096 calls, each compiling ~8,000 RE2 instructions; ~10 s unbounded. */
    const NESTED_REPEAT = `${list64}.exists(x, ${list64}.exists(y, hop.destination.matches("((a|b|c|d){100}){10}")))`;
    /** A destination of 126 characters that keeps every alternative of the pattern alive while it is scanned. */
    const longDestination = { kind: "foreign" as const, id: "ab".repeat(59) };

    it("refuses the nested-repetition rule at store time, naming the rule and the limit", () => {
      expect(NESTED_REPEAT.length).toBe(437);
      const { value: error, ms } = timed(() => refusal(NESTED_REPEAT));
      expect(error.code).toBe(ErrorCode.InvalidPolicy);
      expect(error.details.path).toBe("rules[0].when");
      expect(error.message).toMatch(/rule 'slow-rule'/);
      expect(error.message).toMatch(/"\(\(a\|b\|c\|d\)\{100\}\)\{10\}" expands to about \d+ steps .* at most 1000 are allowed \(limit maxRegexSize\)/);
      expect(ms).toBeLessThan(500);
    });

    it.each([
      ["a computed pattern", `hop.destination.matches(hop.workflow)`, "maxRegexPatternChars", /must be a string literal/],
      ["a pattern over 256 characters", `hop.destination.matches("${"a".repeat(257)}")`, "maxRegexPatternChars", /has 257 characters; at most 256/],
      ["a counted repetition inside a counted repetition", `hop.destination.matches("(x{40}){40}")`, "maxRegexSize", /expands to about/],
      [
        "a small pattern run in nested loops, charged by pattern size × input length",
        `${list64}.exists(x, ${list64}.exists(y, hop.destination.matches("^(foreign|role):[a-z]+$")))`,
        "maxEstimatedCost",
        /may cost up to \d+ evaluation steps/,
      ],
    ])("refuses %s", (_what, when, limit, message) => {
      const error = refusal(when);
      expect(error.code).toBe(ErrorCode.InvalidPolicy);
      expect(error.message).toMatch(/rule 'slow-rule'/);
      expect(error.message).toMatch(message);
      expect(error.message).toContain(`(limit ${limit})`);
    });

    it("stored earlier (past the store-time limits), the nested-repetition rule denies within milliseconds", () => {
      const policy = compilePolicy(policyWith(NESTED_REPEAT), { enforceStoreLimits: false });
      const { value: verdict, ms, worst } = timed(() => evaluate(policy, hop({ destination: longDestination })));
      expect(verdict).toMatchObject({ verdict: "deny", rule: "slow-rule" });
      expect(verdict.reason).toMatch(/exceeded its evaluation budget of 50000 steps/);
      // Unbounded this is ~10 s (a pattern compiled and run 4,096 times); the budget trips before the first compile.
      expect(ms).toBeLessThan(100);
      expect(worst).toBeLessThan(1_000);
    });

    it("stored earlier, a pattern within the size limit but run in nested loops runs out of budget quickly", () => {
      const when = `${list64}.exists(x, ${list64}.exists(y, hop.destination.matches("(a|b|c|d){100}e")))`;
      const policy = compilePolicy(policyWith(when), { enforceStoreLimits: false });
      const { value: verdict, ms, worst } = timed(() => evaluate(policy, hop({ destination: longDestination })));
      expect(verdict).toMatchObject({ verdict: "deny", reason: expect.stringMatching(/evaluation budget/) });
      // Unbounded: 4,096 compilations and runs of a pattern of ~800 units (~300 instructions) over 126 characters, seconds.
      expect(ms).toBeLessThan(100);
      expect(worst).toBeLessThan(1_000);
    });

    it("keeps ordinary matches rules working, in loops over split hop fields too", () => {
      const rules = [
        { id: "numbered", when: `hop.destination_id.matches("^job-[0-9]{3,5}$")`, verdict: "deny", reason: "batch jobs" },
        { id: "by-part", when: `hop.destination.split(":").exists(p, p.matches("^(?i)pay(roll)?$"))`, verdict: "requires_approval", reason: "money" },
        { id: "classes", when: `hop.workflow.matches("^[a-z][a-z0-9_-]*@\\\\d+$") && !hop.destination.matches("[\\\\]{}]")`, verdict: "allow", reason: "fine" },
      ];
      const policy = compilePolicy({ default: "deny", rules: rules.map((r) => ({ ...r, action: ["a2a_egress"] })) });
      expect(evaluate(policy, hop({ destination: { kind: "foreign", id: "job-1234" } }))).toMatchObject({ verdict: "deny", rule: "numbered" });
      expect(evaluate(policy, hop({ destination: { kind: "foreign", id: "PAYROLL" } }))).toMatchObject({ verdict: "requires_approval", rule: "by-part" });
      expect(evaluate(policy, hop({ destination: { kind: "foreign", id: "job-12" } }))).toMatchObject({ verdict: "allow", rule: "classes" });
      expect(evaluate(policy, hop({ workflow: "Report@3" }))).toMatchObject({ verdict: "deny", rule: "builtin:default" });
      // Run many times (each pattern is compiled once, then cached): well within the per-evaluation budget.
      for (let i = 0; i < 200; i++) expect(evaluate(policy, hop()).rule).toBe("classes");
    });
  });

  it("keeps normal conditions, loops included, working", () => {
    const rules = [
      { id: "by-part", when: `hop.destination.split(":").exists(p, p == "weather")`, verdict: "deny", reason: "no weather" },
      { id: "by-list", when: `["billing", "payroll"].exists(x, hop.destination_id == x)`, verdict: "requires_approval", reason: "money" },
      { id: "all-keys", when: `hop.all(k, k != "nope") && ["a", "b"].map(x, x.upperAscii()).join("-") == "A-B"`, verdict: "allow", reason: "fine" },
    ];
    const policy = compilePolicy({ default: "deny", rules: rules.map((r) => ({ ...r, action: ["a2a_egress"] })) });
    expect(evaluate(policy, hop())).toMatchObject({ verdict: "deny", rule: "by-part" });
    expect(evaluate(policy, hop({ destination: { kind: "foreign", id: "payroll" } }))).toMatchObject({ verdict: "requires_approval", rule: "by-list" });
    expect(evaluate(policy, hop({ destination: { kind: "foreign", id: "maps" } }))).toMatchObject({ verdict: "allow", rule: "all-keys" });
    // Two nested loops over small lists are within every limit.
    expect(() => compilePolicy(policyWith(`${range(20)}.exists(a, ${range(20)}.exists(b, a * b == 391))`))).not.toThrow();
  });
});
