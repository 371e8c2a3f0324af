/**
 * schemas/workflow.schema.json, the editors' schema for workflow files, stays in step with the parser: the same
 * keys, every example workflow valid under both, and bad definitions refused by both.
 */
import { readdirSync, readFileSync } from "node:fs";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { parseWorkflowDefinition, ROOT_KEYS, STEP_KEYS } from "../../src/workflow/definition.js";

const schema = JSON.parse(readFileSync(new URL("../../schemas/workflow.schema.json", import.meta.url), "utf8")) as {
  properties: Record<string, unknown>;
  definitions: { step: { properties: Record<string, unknown> } };
};
const validate = new Ajv({ strict: true, allowUnionTypes: true, allErrors: true }).compile(schema);
const examplesDir = new URL("../../examples/workflows/", import.meta.url);
const examples = readdirSync(examplesDir).filter((f) => f.endsWith(".yaml"));

describe("schemas/workflow.schema.json", () => {
  it("lists exactly the keys the parser accepts", () => {
    expect(Object.keys(schema.properties).sort()).toEqual([...ROOT_KEYS].sort());
    expect(Object.keys(schema.definitions.step.properties).sort()).toEqual([...STEP_KEYS].sort());
  });

  it.each(examples)("accepts examples/workflows/%s, which the parser accepts too", (file) => {
    const text = readFileSync(new URL(file, examplesDir), "utf8");
    expect(text.startsWith("# yaml-language-server: $schema=../../schemas/workflow.schema.json\n")).toBe(true);
    const ok = validate(parseYaml(text));
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
    expect(() => parseWorkflowDefinition(text)).not.toThrow();
  });

  it("accepts step schemas, durations as text or milliseconds, and a single need", () => {
    const def = { name: "full", budget: 5, steps: [{ id: "a", to: "team:ops", timeout: "1.5s", backoff: 0, input_schema: { type: "object" }, output_schema: true }, { id: "b", to: "foreign:x.y", needs: "a", retries: 10, clearance: 3, approval: true, cost_estimate: 0.5 }] };
    expect(validate(def)).toBe(true);
    expect(() => parseWorkflowDefinition(def)).not.toThrow();
  });

  it.each([
    ["an unknown key", { name: "w", steps: [{ id: "a", to: "role:x", depends_on: [] }] }],
    ["a step without to", { name: "w", steps: [{ id: "a" }] }],
    ["a bad destination kind", { name: "w", steps: [{ id: "a", to: "queue:x" }] }],
    ["too many retries", { name: "w", steps: [{ id: "a", to: "role:x", retries: 11 }] }],
    ["a duration without a unit", { name: "w", steps: [{ id: "a", to: "role:x", timeout: "30" }] }],
    ["an upper-case name", { name: "Report", steps: [{ id: "a", to: "role:x" }] }],
    ["no steps", { name: "w", steps: [] }],
    ["a schema that is a list", { name: "w", steps: [{ id: "a", to: "role:x", input_schema: [] }] }],
  ])("refuses %s, as the parser does", (_what, def) => {
    expect(validate(def)).toBe(false);
    expect(() => parseWorkflowDefinition(def)).toThrow(/./);
  });
});
