import { describe, expect, it } from "vitest";
import { isSwitchyardError } from "../../src/errors.js";
import { compilePolicy } from "../../src/governance/policy.js";

/** Compiles and returns the INVALID_POLICY error's path and message; fails the test if it compiles. */
function policyError(input: unknown): { path: string; message: string } {
  try {
    compilePolicy(input);
  } catch (error) {
    if (!isSwitchyardError(error, "INVALID_POLICY")) throw error;
    return { path: String(error.details.path), message: error.message };
  }
  throw new Error("expected the policy to be refused");
}

const rule = (extra: Record<string, unknown>) => ({ rules: [{ id: "r1", verdict: "allow", reason: "ok", ...extra }] });

describe("policy documents", () => {
  it("compiles the documented YAML example and normalizes it", () => {
    const policy = compilePolicy(`
default: allow
clearance:
  "role:intern": 1
  "team:*": 3
rules:
  - id: approve-publish
    action: dispatch
    destination: "role:publish*"
    when: "hop.cost > 5.0 || hop.approval_hint"
    verdict: requires_approval
    reason: "publishing needs a human"
`);
    expect(policy.document).toEqual({
      default: "allow",
      over_budget: "deny",
      clearance: { "role:intern": 1, "team:*": 3 },
      rules: [
        {
          id: "approve-publish",
          action: ["dispatch"],
          destination: ["role:publish*"],
          when: "hop.cost > 5.0 || hop.approval_hint",
          verdict: "requires_approval",
          reason: "publishing needs a human",
        },
      ],
    });
    expect(policy.rules[0]!.when?.source).toBe("hop.cost > 5.0 || hop.approval_hint");
    // The normalized document compiles to the same document again (what the store relies on).
    expect(compilePolicy(JSON.parse(JSON.stringify(policy.document))).document).toEqual(policy.document);
  });

  it("takes JSON text and parsed objects alike, and an empty mapping means allow everything", () => {
    const fromJson = compilePolicy('{"default":"deny","rules":[{"id":"a","action":["sub_query","reply"],"verdict":"allow","reason":"x"}]}');
    expect(fromJson.defaultVerdict).toBe("deny");
    expect([...fromJson.rules[0]!.actions!]).toEqual(["sub_query", "reply"]);
    const empty = compilePolicy({});
    expect(empty.defaultVerdict).toBe("allow");
    expect(empty.overBudget).toBe("deny");
    expect(empty.rules).toEqual([]);
  });

  it.each([
    ["not YAML", "rules: [", "", /not valid YAML/],
    ["duplicate YAML keys", "default: allow\ndefault: deny\n", "", /unique/],
    ["not a mapping", "- a\n- b\n", "", /must be a mapping/],
    ["unknown top-level key", { defualt: "allow" }, "defualt", /unknown key 'defualt' \(did you mean 'default'\?\)/],
    ["bad default verdict", { default: "permit" }, "default", /"permit" is not a valid verdict/],
    ["bad over_budget", { over_budget: "allow" }, "over_budget", /use one of deny, requires_approval/],
    ["rules not a list", { rules: { id: "x" } }, "rules", /rules must be a list/],
    ["rule not a mapping", { rules: ["deny all"] }, "rules[0]", /a rule must be a mapping/],
    ["unknown rule key", rule({ verdit: "deny" }), "rules[0].verdit", /did you mean 'verdict'/],
    ["missing id", { rules: [{ verdict: "deny", reason: "x" }] }, "rules[0].id", /rule id must be a non-empty string/],
    ["reserved id", rule({ id: "builtin:mine" }), "rules[0].id", /reserved/],
    ["bad id characters", rule({ id: "has space" }), "rules[0].id", /may use letters/],
    ["missing verdict", { rules: [{ id: "a", reason: "x" }] }, "rules[0].verdict", /needs a verdict/],
    ["bad verdict", rule({ verdict: "requires-approval" }), "rules[0].verdict", /did you mean 'requires_approval'/],
    ["missing reason", { rules: [{ id: "a", verdict: "deny" }] }, "rules[0].reason", /reason/],
    ["unknown action", rule({ action: "dispach" }), "rules[0].action", /not a valid action type \(did you mean 'dispatch'\?\)/],
    ["unknown action in a list", rule({ action: ["dispatch", "egress"] }), "rules[0].action[1]", /not a valid action type/],
    ["empty action list", rule({ action: [] }), "rules[0].action", /non-empty list/],
    ["destination without a kind", rule({ destination: "intern" }), "rules[0].destination", /role:NAME, team:NAME or foreign:KEY/],
    ["bad destination in a list", rule({ destination: ["role:a", "queue:b"] }), "rules[0].destination[1]", /not a destination pattern/],
    ["clearance not a mapping", { clearance: [1] }, "clearance", /must be a mapping/],
    ["clearance bad pattern", { clearance: { intern: 1 } }, 'clearance["intern"]', /not a destination pattern/],
    ["clearance negative", { clearance: { "role:intern": -1 } }, 'clearance["role:intern"]', /whole number >= 0/],
    ["clearance fraction", { clearance: { "role:intern": 1.5 } }, 'clearance["role:intern"]', /whole number >= 0/],
    ["clearance string", { clearance: { "role:intern": "high" } }, 'clearance["role:intern"]', /whole number >= 0/],
    ["when not a string", rule({ when: true }), "rules[0].when", /non-empty string/],
  ])("refuses %s with its path", (_name, input, path, message) => {
    const error = policyError(input);
    expect(error.path).toBe(path);
    expect(error.message).toMatch(message);
  });

  it("names the second rule of a duplicate id pair", () => {
    const error = policyError({
      rules: [
        { id: "same", verdict: "allow", reason: "a" },
        { id: "other", verdict: "allow", reason: "b" },
        { id: "same", verdict: "deny", reason: "c" },
      ],
    });
    expect(error).toEqual({ path: "rules[2].id", message: expect.stringMatching(/duplicate rule id 'same' \(already used by rules\[0\]\)/) });
  });
});

describe("policy CEL conditions", () => {
  it.each([
    ["a syntax error", "hop.cost >", /does not compile: at 1:/],
    ["an unknown variable", "request.cost > 1.0", /unknown variable 'request'/],
    ["an unknown hop field", "hop.costs > 1.0", /unknown field hop.costs \(did you mean hop.cost\?\)/],
    ["an unknown hop field in has()", "has(hop.nope)", /unknown field hop.nope/],
    ["an unknown function", "shout(hop.destination)", /unknown function 'shout'/],
    ["an unknown method", "hop.destination.shout()", /unknown function 'shout'/],
    ["a non-boolean result", "hop.cost + 1.0", /must be a boolean expression, but it yields double/],
    ["a string result", "hop.destination", /yields string/],
    ["non-boolean operands of &&", "hop.cost && true", /operands of && must be boolean, got double/],
    ["a comparison of a string with a number", "hop.destination > 3", /'>' cannot be applied to \(string, int\)/],
    ["a ternary yielding strings", "hop.approval_hint ? 'yes' : 'no'", /yields string/],
  ])("refuses %s at the rule's when path", (_name, when, message) => {
    const error = policyError({ rules: [{ id: "a", verdict: "allow", reason: "x" }, { id: "b", when, verdict: "deny", reason: "x" }] });
    expect(error.path).toBe("rules[1].when");
    expect(error.message).toMatch(message);
  });

  it.each([
    "hop.cost > 5.0 || hop.approval_hint",
    "hop.cost > 5",
    "hop.clearance >= 2 && hop.delegation_depth < 3",
    "hop.clearance > 1.5",
    "hop.task_budget != null && hop.task_cost + hop.cost > hop.task_budget * 0.8",
    "hop.destination.startsWith('role:') && hop.destination_kind == 'role'",
    "hop.destination_id.matches('^publish.*$')",
    "hop.action in ['dispatch', 'sub_query']",
    "size(hop.workflow) > 0 && hop.workflow.lowerAscii().contains('pay')",
    "['a', 'b'].exists(x, x == hop.destination_id)",
    "[1, 2].all(n, n < hop.delegation_depth)",
    "!hop.approval_hint",
    "int(hop.cost) > 2",
    "hop['cost'] > 1.0",
    "hop.task_budget == null ? true : hop.task_budget > 10.0",
  ])("accepts %s", (when) => {
    expect(compilePolicy({ rules: [{ id: "a", when, verdict: "deny", reason: "x" }] }).rules[0]!.when).not.toBeNull();
  });
});
