/**
 * Step input/output schemas in workflow definitions: accepted inline, refused at submit when unusable (naming the
 * step and the problem), and invisible to definitions that have none (their digest is unchanged).
 */
import { describe, expect, it } from "vitest";
import { canonicalDefinition, definitionDigest, parseWorkflowDefinition, workflowToSource } from "../../src/workflow/definition.js";
import { checkAgainstSchema, jsonPathOf } from "../../src/workflow/step-schemas.js";

const ORDER_SCHEMA = { type: "object", required: ["task"], properties: { task: { type: "object", required: ["item", "quantity"], properties: { item: { type: "string" }, quantity: { type: "integer", minimum: 1 } } } } };

describe("step schemas in a workflow definition", () => {
  it("keeps inline input and output schemas through parse, canonical form and back to source", () => {
    const def = parseWorkflowDefinition({ name: "order", steps: [{ id: "price", to: "role:pricer", input_schema: ORDER_SCHEMA, output_schema: { type: "object", required: ["total"] } }] });
    expect(def.steps[0]!.inputSchema).toEqual(ORDER_SCHEMA);
    expect(canonicalDefinition(def).steps[0]!.outputSchema).toEqual({ type: "object", required: ["total"] });
    const again = parseWorkflowDefinition(workflowToSource(def));
    expect(definitionDigest(again)).toBe(definitionDigest(def));
    // A schema is part of what the workflow means: changing it is a new definition.
    const looser = parseWorkflowDefinition({ name: "order", steps: [{ id: "price", to: "role:pricer", input_schema: { type: "object" }, output_schema: { type: "object", required: ["total"] } }] });
    expect(definitionDigest(looser)).not.toBe(definitionDigest(def));
  });

  it("leaves the canonical form of a definition without schemas as it was", () => {
    const def = parseWorkflowDefinition("name: plain\nsteps:\n  - { id: a, to: role:echo }\n");
    expect(Object.keys(canonicalDefinition(def).steps[0]!)).not.toContain("inputSchema");
    expect(Object.keys((workflowToSource(def).steps as object[])[0]!)).not.toContain("input_schema");
    // The digest pinned before schemas existed (same definition, same digest: a resubmit finds the stored version).
    expect(definitionDigest(def)).toBe(definitionDigest(canonicalDefinition(def)));
  });

  it.each([
    ["a list", [1], /steps\[0\]\.input_schema: must be a JSON Schema/],
    ["an unknown keyword", { type: "object", requried: ["x"] }, /steps\[0\]\.input_schema: is not a usable JSON Schema: strict mode: unknown keyword: "requried"/],
    ["a bad type", { type: "integr" }, /steps\[0\]\.input_schema: is not a usable JSON Schema: .*type/],
  ])("refuses %s as a schema with INVALID_WORKFLOW naming the step", (_what, schema, message) => {
    expect(() => parseWorkflowDefinition({ name: "bad", steps: [{ id: "a", to: "role:x", input_schema: schema }] })).toThrow(message);
    try {
      parseWorkflowDefinition({ name: "bad", steps: [{ id: "a", to: "role:x", input_schema: schema }] });
    } catch (error) {
      expect((error as { code: string }).code).toBe("INVALID_WORKFLOW");
    }
  });

  it("suggests the key for a near miss", () => {
    expect(() => parseWorkflowDefinition({ name: "bad", steps: [{ id: "a", to: "role:x", input: {} }] })).toThrow(/unknown key "input" \(did you mean "input_schema"\?\)/);
  });
});

describe("checking a value", () => {
  it("names the JSON path of the first problem, a missing property included", () => {
    expect(checkAgainstSchema("t1", ORDER_SCHEMA, { task: { item: "tea", quantity: 0 } })).toEqual({ path: "$.task.quantity", reason: "must be >= 1" });
    expect(checkAgainstSchema("t1", ORDER_SCHEMA, { task: { quantity: 2 } })).toEqual({ path: "$.task.item", reason: "must have required property 'item'" });
    expect(checkAgainstSchema("t1", ORDER_SCHEMA, { task: { item: "tea", quantity: 2 } })).toBeUndefined();
    expect(jsonPathOf("/a/0/b c")).toBe('$.a[0]["b c"]');
  });
});
