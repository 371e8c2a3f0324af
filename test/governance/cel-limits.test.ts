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
