/**
 * Concurrency keys (issue 15): a workflow step may say `concurrency: { key: task.input.customerId, limit: 2 }`, and
 * then at most 2 steps of the tenant whose task input has the same `customerId` are in flight at once — however
 * many tasks the customer has, the tenant's other customers keep going. The key is a path into the task's input;
 * steps of any workflow of the tenant that name the same path share the key's count (each step's own limit applies
 * when it is admitted). A task whose input has no value there is not limited by the key.
 */
import { createHash } from "node:crypto";
import type { StepDefinition } from "../domain.js";
import { stableJson } from "../stable-json.js";

/** A key group of one tenant: the path and the value it found, as stored on steps and held rows. */
export interface ConcurrencyGroup {
  key: string;
  limit: number;
}

export const MAX_CONCURRENCY_LIMIT = 10_000;
const KEY_PATH = /^task\.input(\.[A-Za-z0-9_-]{1,64}){1,8}$/;
/** Longer values are stored by digest: a key is an index entry, not a copy of the input. */
const MAX_VALUE_CHARS = 200;

/** Why a `concurrency` entry of a workflow file is wrong, or undefined when it is right. */
export function concurrencyProblem(raw: unknown): { path: string; reason: string } | undefined {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return { path: "", reason: `must be a mapping { key: task.input.FIELD, limit: N }, got ${JSON.stringify(raw)}` };
  const { key, limit, ...rest } = raw as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) return { path: `.${extra[0]}`, reason: `unknown key "${extra[0]}" (a concurrency entry has key and limit)` };
  if (typeof key !== "string" || !KEY_PATH.test(key)) {
    return { path: ".key", reason: `must be a path into the task's input such as "task.input.customerId" (letters, digits, "_", "-" between dots), got ${JSON.stringify(key)}` };
  }
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_CONCURRENCY_LIMIT) {
    return { path: ".limit", reason: `must be a whole number from 1 to ${MAX_CONCURRENCY_LIMIT} (steps in flight per key value), got ${JSON.stringify(limit)}` };
  }
  return undefined;
}

/**
 * The step's key group for this task's input, or undefined when the step has no key or the input no value there
 * (null counts as no value). The stored key reads `task.input.customerId="c-42"`; a value longer than 200
 * characters of JSON is stored as its sha256.
 */
export function concurrencyGroupOf(step: Pick<StepDefinition, "concurrency"> | undefined, taskInput: unknown): ConcurrencyGroup | undefined {
  const spec = step?.concurrency;
  if (!spec) return undefined;
  let value: unknown = taskInput;
  for (const field of spec.key.split(".").slice(2)) {
    if (value === null || typeof value !== "object" || Array.isArray(value) || !Object.hasOwn(value, field)) return undefined;
    value = (value as Record<string, unknown>)[field];
  }
  if (value === null || value === undefined) return undefined;
  let text = stableJson(value);
  if (text.length > MAX_VALUE_CHARS) text = `sha256:${createHash("sha256").update(text).digest("hex")}`;
  return { key: `${spec.key}=${text}`, limit: spec.limit };
}
