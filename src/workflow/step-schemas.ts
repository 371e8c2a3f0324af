/**
 * Step input/output schemas: a workflow step may name a JSON Schema (draft 2020-12 subset ajv 8 knows, written
 * inline in the definition) for the input its handler receives and for the output it returns. The definition parser
 * compiles them at submit (a bad schema is refused there, never at run time); the coordinator checks a step's input
 * at dispatch and its handler's output at result and fails the step closed — not retried — naming the JSON path of
 * the first problem.
 *
 * Deterministic, as the decision function must be: one ajv instance, no formats, no coercion, no defaults written
 * into the value, the first error only. Compiled validators are cached per (tenant, workflow version, step, side);
 * a version is immutable, so a cached validator never goes stale.
 */
import { Ajv, type ValidateFunction } from "ajv";

export type SchemaSide = "input" | "output";

/** The step error codes of a value that does not match its schema. */
export const SCHEMA_ERROR_CODES: Readonly<Record<SchemaSide, string>> = { input: "INPUT_SCHEMA", output: "OUTPUT_SCHEMA" };

/** Schemas are small documents; one far larger is a mistake (or an attack on every coordinator holding it). */
export const MAX_SCHEMA_CHARS = 64 * 1024;
/** Compiled validators kept; past it the cache starts over (compiling is cheap next to a hop, just not free). */
const MAX_CACHED_VALIDATORS = 2_000;

// strictSchema: a keyword ajv does not know (a typo such as `requried`) is refused at submit rather than silently
// ignored; the stricter checks (a `required` property not also under `properties`, …) refuse ordinary schemas, so
// they are off. validateFormats off: `format` is an annotation here, so no result depends on which formats this
// build knows. No logger: nothing a tenant submits writes to the coordinator's console.
const ajv = new Ajv({
  strictSchema: true, strictNumbers: true, strictTypes: false, strictTuples: false, strictRequired: false,
  allErrors: false, validateFormats: false, useDefaults: false, coerceTypes: false, addUsedSchema: false, logger: false,
});

const cache = new Map<string, ValidateFunction>();

function shapeProblem(schema: unknown): string | undefined {
  if (typeof schema !== "boolean" && (typeof schema !== "object" || schema === null || Array.isArray(schema))) {
    return `must be a JSON Schema (a mapping such as { type: object }), got ${Array.isArray(schema) ? "a list" : JSON.stringify(schema)}`;
  }
  const chars = JSON.stringify(schema).length;
  if (chars > MAX_SCHEMA_CHARS) return `is ${chars} characters as JSON, over the ${MAX_SCHEMA_CHARS}-character limit`;
  return undefined;
}

/** Compiles a schema; throws an Error whose message says what is wrong with it. */
function compile(schema: unknown): ValidateFunction {
  const shape = shapeProblem(schema);
  if (shape) throw new Error(shape);
  return ajv.compile(schema as object);
}

/** The problem with a schema as the definition parser reports it, or undefined when it compiles. */
export function schemaProblem(schema: unknown): string | undefined {
  const shape = shapeProblem(schema);
  if (shape) return shape;
  try {
    ajv.compile(schema as object);
    return undefined;
  } catch (error) {
    return `is not a usable JSON Schema: ${(error as Error).message}`;
  }
}

/** `/task/items/0` → `$.task.items[0]`; keys that are not plain words are quoted. */
export function jsonPathOf(pointer: string): string {
  if (pointer === "") return "$";
  const parts = pointer.slice(1).split("/").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  return `$${parts.map((p) => (/^\d+$/.test(p) ? `[${p}]` : /^[A-Za-z_$][\w$]*$/.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`)).join("")}`;
}

export interface SchemaMismatch {
  /** JSONPath of the value that failed (`$.task.quantity`); `$` for the value as a whole. */
  path: string;
  /** ajv's reason (`must be number`, `must have required property 'item'`). */
  reason: string;
}

/**
 * Checks `value` against `schema`; undefined when it matches. `cacheKey` names the schema (tenant, workflow version,
 * step, side): the same key must always mean the same schema.
 */
export function checkAgainstSchema(cacheKey: string, schema: unknown, value: unknown): SchemaMismatch | undefined {
  let validate = cache.get(cacheKey);
  if (!validate) {
    if (cache.size >= MAX_CACHED_VALIDATORS) cache.clear();
    validate = compile(schema);
    cache.set(cacheKey, validate);
  }
  if (validate(value)) return undefined;
  const first = validate.errors?.[0];
  if (!first) return { path: "$", reason: "does not match" };
  // A missing property is reported on its parent; the path names the property itself, which is what to fix.
  const missing = first.keyword === "required" ? `/${String((first.params as { missingProperty?: unknown }).missingProperty)}` : "";
  return { path: jsonPathOf(`${first.instancePath}${missing}`), reason: first.message ?? "does not match" };
}

/** The step error of a mismatch: `INPUT_SCHEMA` / `OUTPUT_SCHEMA`, never retried (the same value fails again). */
export function schemaError(side: SchemaSide, stepId: string, mismatch: SchemaMismatch): { code: string; message: string; retryable: false } {
  return {
    code: SCHEMA_ERROR_CODES[side],
    message: `step ${stepId} ${side} does not match its ${side}_schema at ${mismatch.path}: ${mismatch.reason}`,
    retryable: false,
  };
}
