import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  canonicalDefinition,
  definitionDigest,
  dependents,
  parseWorkflowDefinition,
  topologicalOrder,
  workflowToSource,
  type WorkflowProblem,
} from "../../src/workflow/definition.js";
import { SwitchyardError } from "../../src/errors.js";

const examplesDir = new URL("../../examples/workflows/", import.meta.url);

/** The problems a definition is rejected with; fails the test when it is accepted. */
function problemsOf(source: string | object, options?: { format?: "yaml" | "json" }): WorkflowProblem[] {
  try {
    parseWorkflowDefinition(source, options);
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    const e = error as SwitchyardError;
    expect(e.code).toBe("INVALID_WORKFLOW");
    const problems = e.details.errors as WorkflowProblem[];
    expect(e.details.path).toBe(problems[0]!.path);
    expect(e.details.reason).toBe(problems[0]!.reason);
    return problems;
  }
  return expect.unreachable("definition should have been rejected");
}

/** The single problem a definition is rejected with. */
function problemOf(source: string | object): WorkflowProblem {
  const problems = problemsOf(source);
  expect(problems).toHaveLength(1);
  return problems[0]!;
}

function withStep(step: Record<string, unknown>): object {
  return { name: "wf", steps: [{ id: "a", to: "role:r" }, { id: "b", to: "role:r", ...step }] };
}

describe("parseWorkflowDefinition: accepted input", () => {
  it("normalises the demo workflow, filling in defaults", async () => {
    const def = parseWorkflowDefinition(await readFile(new URL("demo.yaml", examplesDir), "utf8"));
    expect(def).toEqual({
      name: "research-report",
      description: "Research a topic, have an outside agent fact-check it, draft a report, and publish it after a human approves.",
      budget: 100,
      steps: [
        { id: "research", to: { kind: "role", id: "researcher" }, needs: [], timeoutMs: 30_000, retries: 0, backoffMs: 1000, costEstimate: 2, clearance: 0, approval: false },
        { id: "fact-check", to: { kind: "foreign", id: "fact-checker" }, needs: ["research"], timeoutMs: 30_000, retries: 0, backoffMs: 1000, costEstimate: 1, clearance: 0, approval: false },
        { id: "draft", to: { kind: "role", id: "writer" }, needs: ["fact-check"], timeoutMs: null, retries: 2, backoffMs: 200, costEstimate: 3, clearance: 0, approval: false },
        { id: "publish", to: { kind: "role", id: "publisher" }, needs: ["draft"], timeoutMs: null, retries: 0, backoffMs: 1000, costEstimate: 1, clearance: 0, approval: true },
      ],
    });
  });

  it("accepts the fanout diamond and orders it topologically", async () => {
    const def = parseWorkflowDefinition(await readFile(new URL("fanout.yaml", examplesDir), "utf8"));
    expect(def.steps.map((s) => [s.id, s.needs])).toEqual([["a", []], ["b", ["a"]], ["c", ["a"]], ["d", ["b", "c"]]]);
    expect(topologicalOrder(def).map((s) => s.id)).toEqual(["a", "b", "c", "d"]);
    expect(dependents(def, "a")).toEqual(["b", "c"]);
    expect(dependents(def, "d")).toEqual([]);
  });

  it("reads three-step.yaml as a chain through the default needs", async () => {
    const def = parseWorkflowDefinition(await readFile(new URL("three-step.yaml", examplesDir), "utf8"));
    expect(def.name).toBe("three-step");
    expect(def.budget).toBeNull();
    expect(def.steps.map((s) => [s.id, s.needs, s.retries, s.timeoutMs, s.approval, formatTo(s.to)])).toEqual([
      ["one", [], 3, 5000, false, "role:echo"],
      ["two", ["one"], 3, 5000, false, "role:echo"],
      ["three", ["two"], 3, 5000, false, "role:echo"],
    ]);
  });

  it("defaults needs to the previous step, and keeps an explicit [] as no needs", () => {
    const def = parseWorkflowDefinition({
      name: "defaults",
      steps: [
        { id: "a", to: "role:r" },
        { id: "b", to: "team:t" },
        { id: "c", to: "foreign:agent.one", needs: [] },
        { id: "d", to: "role:r" },
        { id: "e", to: "role:r", needs: "a" },
      ],
    });
    expect(def.steps.map((s) => s.needs)).toEqual([[], ["a"], [], ["c"], ["a"]]);
    expect(def.steps[2]!.to).toEqual({ kind: "foreign", id: "agent.one" });
    // c has no needs, so it may run before b; ties keep definition order.
    expect(topologicalOrder(def).map((s) => s.id)).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("allows needs to name a later step and orders by dependency", () => {
    const def = parseWorkflowDefinition({
      name: "backwards",
      steps: [
        { id: "last", to: "role:r", needs: ["first"] },
        { id: "first", to: "role:r", needs: [] },
      ],
    });
    expect(topologicalOrder(def).map((s) => s.id)).toEqual(["first", "last"]);
  });

  it("reads durations in every unit and as plain milliseconds, and null as the default", () => {
    const timeouts = ["500ms", "30s", "5m", "1h", "1.5s", 250, "24h"].map(
      (timeout) => parseWorkflowDefinition(withStep({ timeout })).steps[1]!.timeoutMs,
    );
    expect(timeouts).toEqual([500, 30_000, 300_000, 3_600_000, 1500, 250, 86_400_000]);
    const def = parseWorkflowDefinition(withStep({ backoff: "0s", timeout: null, retries: null }));
    expect(def.steps[1]).toMatchObject({ backoffMs: 0, timeoutMs: null, retries: 0 });
  });

  it("reads JSON, and YAML written as a flow mapping when the format says so", () => {
    const json = JSON.stringify({ name: "j", budget: 5, steps: [{ id: "a", to: "role:r", clearance: 3 }] });
    const def = parseWorkflowDefinition(json);
    expect(def).toMatchObject({ name: "j", budget: 5, steps: [{ id: "a", clearance: 3 }] });
    expect(parseWorkflowDefinition("{name: j, budget: 5, steps: [{id: a, to: 'role:r', clearance: 3}]}", { format: "yaml" })).toEqual(def);
  });

  it("round-trips through workflowToSource", async () => {
    const def = parseWorkflowDefinition(await readFile(new URL("demo.yaml", examplesDir), "utf8"));
    expect(parseWorkflowDefinition(workflowToSource(def))).toEqual(def);
  });
});

function formatTo(to: { kind: string; id: string }): string {
  return `${to.kind}:${to.id}`;
}

describe("parseWorkflowDefinition: rejected input", () => {
  it("rejects a document that is not a mapping", () => {
    for (const source of ["- a\n- b\n", "just text", "", "42", []]) {
      const problem = problemOf(source);
      expect(problem.path).toBe("");
      expect(problem.reason).toMatch(/must be a mapping/);
    }
  });

  it("reports a YAML syntax error with its line", () => {
    const problem = problemOf("name: x\nsteps:\n  - id: a\n    to: [role:r\n");
    expect(problem.path).toBe("");
    expect(problem.reason).toMatch(/^YAML syntax error at line \d+, column \d+: /);
    expect(problemOf("name: x\nname: y\nsteps: []\n").reason).toMatch(/^YAML syntax error at line 2, column 1: .*unique/);
    expect(problemOf("name: *nowhere\n").reason).toMatch(/^YAML error: .*alias/);
  });

  it("reports a JSON syntax error with its line when the source starts with {", () => {
    const broken = '{\n  "name": "x",\n  "steps": [}\n}';
    const error = (() => {
      try {
        parseWorkflowDefinition(broken);
      } catch (e) {
        return e as SwitchyardError;
      }
      return expect.unreachable();
    })();
    expect(error.code).toBe("INVALID_WORKFLOW");
    expect(error.message).toBe("JSON syntax error at line 3, column 13: Unexpected token '}'");
    expect(problemOf('{"name": "x",\n "steps": [1,]\n}').reason).toMatch(/^JSON syntax error at line 2, column 14/);
    expect(problemOf('{"name": "x" "steps": []}').reason).toMatch(/^JSON syntax error at line 1, column 14/);
    expect(problemsOf("name: x", { format: "json" })[0]!.reason).toMatch(/^JSON syntax error/);
  });

  it("requires a well-formed name", () => {
    const steps = [{ id: "a", to: "role:r" }];
    expect(problemOf({ steps })).toEqual({ path: "name", reason: "is required" });
    expect(problemOf({ name: 7, steps }).path).toBe("name");
    for (const name of ["Research", "-x", "has space", "a".repeat(65), ""]) {
      expect(problemOf({ name, steps }).path).toBe("name");
    }
    expect(parseWorkflowDefinition({ name: "a".repeat(64), steps }).name).toHaveLength(64);
  });

  it("requires at least one step", () => {
    expect(problemOf({ name: "x" })).toEqual({ path: "steps", reason: "is required: a workflow needs at least one step" });
    expect(problemOf({ name: "x", steps: [] })).toEqual({ path: "steps", reason: "must list at least one step" });
    expect(problemOf({ name: "x", steps: { a: 1 } }).path).toBe("steps");
    expect(problemOf({ name: "x", steps: ["a"] }).path).toBe("steps[0]");
  });

  it("rejects unknown keys and suggests the intended one", () => {
    expect(problemOf(withStep({ need: ["a"] }))).toEqual({ path: "steps[1].need", reason: 'unknown key "need" (did you mean "needs"?)' });
    expect(problemOf(withStep({ costEstimate: 1 })).reason).toBe('unknown key "costEstimate" (did you mean "cost_estimate"?)');
    expect(problemOf(withStep({ depends_on: ["a"] })).reason).toContain('(did you mean "needs"?)');
    expect(problemOf(withStep({ retires: 1 })).reason).toContain('(did you mean "retries"?)');
    expect(problemOf(withStep({ colour: "blue" }))).toEqual({ path: "steps[1].colour", reason: 'unknown key "colour"' });
    expect(problemOf(withStep({ "odd key": 1 })).path).toBe('steps[1]["odd key"]');
    expect(problemOf({ name: "x", step: [], steps: [{ id: "a", to: "role:r" }] })).toEqual({
      path: "step",
      reason: 'unknown key "step" (did you mean "steps"?)',
    });
  });

  it("rejects a duplicate step id, naming the first use", () => {
    const problem = problemOf({ name: "x", steps: [{ id: "a", to: "role:r" }, { id: "b", to: "role:r" }, { id: "a", to: "role:r", needs: [] }] });
    expect(problem).toEqual({ path: "steps[2].id", reason: 'duplicate step id "a" (already used by steps[0])' });
  });

  it("rejects missing and malformed step ids", () => {
    expect(problemOf(withStep({ id: undefined }))).toEqual({ path: "steps[1].id", reason: "is required" });
    expect(problemOf(withStep({ id: "bad id" })).path).toBe("steps[1].id");
    expect(problemOf(withStep({ id: 3 })).path).toBe("steps[1].id");
  });

  it("rejects bad destinations", () => {
    const cases: Array<[unknown, RegExp]> = [
      ["robot:x", /unknown destination kind "robot"/],
      ["role:", /has no role name/],
      ["foreign:", /has no agent key/],
      ["role:bad name", /invalid role name "bad name"/],
      ["researcher", /must be role:NAME, team:NAME or foreign:KEY/],
      [{ role: "x" }, /must be a string/],
    ];
    for (const [to, reason] of cases) {
      const problem = problemOf(withStep({ to }));
      expect(problem.path).toBe("steps[1].to");
      expect(problem.reason).toMatch(reason);
    }
    expect(problemOf(withStep({ to: undefined }))).toMatchObject({ path: "steps[1].to", reason: expect.stringMatching(/^is required/) });
  });

  it("rejects needs that name unknown steps, the step itself, or a step twice", () => {
    const source = {
      name: "x",
      steps: [
        { id: "research", to: "role:r" },
        { id: "review", to: "role:r" },
        { id: "publish", to: "role:r", needs: ["draft", "publish", "research", "research", 5] },
      ],
    };
    expect(problemsOf(source)).toEqual([
      { path: "steps[2].needs[0]", reason: 'unknown step "draft"' },
      { path: "steps[2].needs[1]", reason: 'step "publish" cannot need itself' },
      { path: "steps[2].needs[3]", reason: '"research" is listed twice' },
      { path: "steps[2].needs[4]", reason: "must be a step id, got 5" },
    ]);
    expect(problemOf(withStep({ needs: { a: true } })).path).toBe("steps[1].needs");
    expect(problemOf(withStep({ needs: null })).path).toBe("steps[1].needs");
    const message = (() => {
      try {
        parseWorkflowDefinition({ name: "x", steps: [{ id: "a", to: "role:r" }, { id: "b", to: "role:r" }, { id: "c", to: "role:r", needs: ["draft"] }] });
      } catch (e) {
        return (e as Error).message;
      }
      return expect.unreachable();
    })();
    expect(message).toBe('steps[2].needs[0]: unknown step "draft"');
  });

  it("names the path of a cycle", () => {
    expect(problemOf({ name: "x", steps: [{ id: "a", to: "role:r", needs: ["b"] }, { id: "b", to: "role:r" }] })).toEqual({
      path: "steps[0].needs[0]",
      reason: "needs form a cycle: a -> b -> a (each step needs the next)",
    });
    // A longer loop through default needs, plus a second, separate loop: each reported once.
    const problems = problemsOf({
      name: "x",
      steps: [
        { id: "a", to: "role:r", needs: ["c"] },
        { id: "b", to: "role:r" },
        { id: "c", to: "role:r" },
        { id: "d", to: "role:r", needs: ["e", "a"] },
        { id: "e", to: "role:r", needs: ["d"] },
      ],
    });
    expect(problems.map((p) => `${p.path} ${p.reason}`)).toEqual([
      "steps[0].needs[0] needs form a cycle: a -> c -> b -> a (each step needs the next)",
      "steps[3].needs[0] needs form a cycle: d -> e -> d (each step needs the next)",
    ]);
  });

  it("reports one cycle for a knot of loops", () => {
    const problems = problemsOf({
      name: "x",
      steps: [
        { id: "a", to: "role:r", needs: ["b"] },
        { id: "b", to: "role:r", needs: ["c"] },
        { id: "c", to: "role:r", needs: ["a", "b"] },
      ],
    });
    expect(problems).toEqual([{ path: "steps[0].needs[0]", reason: "needs form a cycle: a -> b -> c -> a (each step needs the next)" }]);
  });

  it("rejects bad timeout, backoff, retries, cost, clearance, budget and approval", () => {
    const cases: Array<[string, unknown]> = [
      ["timeout", 0],
      ["timeout", "0s"],
      ["timeout", "-5s"],
      ["timeout", "25h"],
      ["timeout", 86_400_001],
      ["timeout", "30 seconds"],
      ["timeout", "30"],
      ["timeout", true],
      ["backoff", "soon"],
      ["backoff", -1],
      ["backoff", "2d"],
      ["retries", 11],
      ["retries", -1],
      ["retries", 1.5],
      ["retries", "2"],
      ["cost_estimate", -0.5],
      ["cost_estimate", "1"],
      ["clearance", 11],
      ["clearance", 2.5],
      ["approval", "yes"],
      ["approval", 1],
    ];
    for (const [key, value] of cases) {
      const problem = problemOf(withStep({ [key]: value }));
      expect(problem.path, `${key}: ${JSON.stringify(value)}`).toBe(`steps[1].${key}`);
    }
    for (const budget of [0, -1, "50", Number.POSITIVE_INFINITY]) {
      expect(problemOf({ name: "x", budget, steps: [{ id: "a", to: "role:r" }] }).path).toBe("budget");
    }
    expect(problemOf({ name: "x", description: 5, steps: [{ id: "a", to: "role:r" }] }).path).toBe("description");
  });

  it("collects every problem and lists them in the message", () => {
    const source = [
      "name: Bad Name",
      "budget: 0",
      "steps:",
      "  - id: a",
      "    to: robot:x",
      "  - id: b",
      "    to: role:r",
      "    need: [a]",
      "    retries: 99",
      "  - id: c",
      "    to: role:r",
      "    needs: [draft]",
    ].join("\n");
    let error: SwitchyardError | undefined;
    try {
      parseWorkflowDefinition(source);
    } catch (e) {
      error = e as SwitchyardError;
    }
    expect(error?.code).toBe("INVALID_WORKFLOW");
    const paths = (error!.details.errors as WorkflowProblem[]).map((p) => p.path);
    expect(paths).toEqual(["name", "budget", "steps[0].to", "steps[1].need", "steps[1].retries", "steps[2].needs[0]"]);
    expect(error!.details.path).toBe("name");
    expect(error!.message).toMatch(/^6 problems: name: .*; budget: .*; steps\[0\]\.to: .*; steps\[1\]\.need: .*; steps\[1\]\.retries: .*; steps\[2\]\.needs\[0\]: unknown step "draft"$/);
  });
});

describe("definitionDigest", () => {
  const yamlA = [
    "name: same",
    "budget: 10",
    "steps:",
    "  - id: a",
    "    to: role:r",
    "    timeout: 1s",
    "  - id: b",
    "    to: role:r",
    "    needs: [a]",
    "    cost_estimate: 2",
    "  - id: c",
    "    to: role:r",
    "    needs: [a, b]",
  ].join("\n");
  const yamlB = [
    "steps:",
    "  - to: role:r",
    "    timeout: 1000",
    "    id: a",
    "    retries: 0",
    "  - cost_estimate: 2",
    "    to: role:r",
    "    id: b",
    "  - needs: [b, a]",
    "    id: c",
    "    to: role:r",
    "budget: 10",
    "name: same",
  ].join("\n");

  it("is the same for definitions that differ only in key order, spelling of defaults and needs order", () => {
    const a = parseWorkflowDefinition(yamlA);
    const b = parseWorkflowDefinition(yamlB);
    expect(definitionDigest(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(definitionDigest(b)).toBe(definitionDigest(a));
    expect(canonicalDefinition(b)).toEqual(canonicalDefinition(a));
  });

  it("is stable under any reordering of object keys", () => {
    const def = parseWorkflowDefinition(yamlA);
    const expected = definitionDigest(def);
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        expect(definitionDigest(shuffleKeys(def, seed) as typeof def)).toBe(expected);
      }),
      { numRuns: 50 },
    );
  });

  it("changes when anything that affects a run changes", () => {
    const base = parseWorkflowDefinition(yamlA);
    const variants = [
      yamlA.replace("budget: 10", "budget: 11"),
      yamlA.replace("timeout: 1s", "timeout: 2s"),
      yamlA.replace("cost_estimate: 2", "cost_estimate: 3"),
      yamlA.replace("needs: [a, b]", "needs: [b]"),
      yamlA.replace("    to: role:r\n    timeout", "    to: team:r\n    timeout"),
      `${yamlA}\n    approval: true`,
      yamlA.replace("budget: 10", "budget: 10\ndescription: hello"),
    ];
    const digests = new Set([definitionDigest(base), ...variants.map((v) => definitionDigest(parseWorkflowDefinition(v)))]);
    expect(digests.size).toBe(variants.length + 1);
  });
});

/** A deep copy whose object keys appear in an order driven by `seed`. */
function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((v, i) => shuffleKeys(v, seed + i));
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value);
  let state = seed >>> 0;
  for (let i = entries.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
    const j = state % (i + 1);
    [entries[i], entries[j]] = [entries[j]!, entries[i]!];
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, shuffleKeys(v, seed * 31 + k.length)]));
}
