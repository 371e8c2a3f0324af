/**
 * What of a step's input may leave the perimeter (issue 10 §4). A registration may list the top-level input fields
 * that are sent (`send_fields`, CLI `--send FIELD`); the rest never leaves: the bridge's `request` — the only thing
 * a transport sends — is the input restricted to them, computed inside the hop's transaction. `sentHash` is the
 * sha256 of the canonical JSON of exactly that request; it becomes the hop's audit `payload_hash` and the bridge's
 * `sent_hash`, so the audit chain says what left, not what the step was given.
 */
import { createHash } from "node:crypto";

export const INPUT_NOT_SENDABLE = "FOREIGN_INPUT_NOT_SENDABLE";

export type SendableInput = { ok: true; request: unknown } | { ok: false; reason: string };

/**
 * The part of `input` that may be sent. `fields` null: the whole input, as before. A field is a top-level key
 * (`city`) or a dot-separated path into nested objects (`task.city`: a workflow step's input is `{ task, steps }`),
 * copied into the request at the same place. Listed fields absent from the input (or under something that is not an
 * object) are simply absent. An input that is not a JSON object cannot be restricted to fields, so it is refused
 * rather than sent whole (the registration promised that only those fields leave).
 */
export function sendableInput(input: unknown, fields: readonly string[] | null): SendableInput {
  if (fields === null) return { ok: true, request: input };
  if (!isPlainObject(input)) {
    return { ok: false, reason: `the step input is ${describe(input)}, not an object, so it cannot be restricted to the fields ${fields.join(", ")}` };
  }
  const request: Record<string, unknown> = {};
  for (const field of fields) copyPath(input, request, field.split("."));
  return { ok: true, request };
}

/** Copies the value at `path` from `from` into `to`; answers whether anything was copied (no empty shells left). */
function copyPath(from: Record<string, unknown>, to: Record<string, unknown>, path: readonly string[]): boolean {
  const [key, ...rest] = path as [string, ...string[]];
  // Own properties only: a field named like an Object.prototype member must not reach anything inherited.
  if (!Object.hasOwn(from, key) || from[key] === undefined) return false;
  const value = from[key];
  if (rest.length === 0) {
    to[key] = value;
    return true;
  }
  if (!isPlainObject(value)) return false;
  const existing = Object.hasOwn(to, key) ? to[key] : undefined;
  // A shorter path listed too (`task` with `task.city`) already copied the whole object: keep it whole.
  if (existing === value) return true;
  const child = isPlainObject(existing) ? existing : {};
  if (!copyPath(value, child, rest)) return false;
  to[key] = child;
  return true;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return `a ${typeof value}`;
}

/** JSON with object keys sorted at every level (arrays keep their order); `undefined` members are dropped like JSON does. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(",")}}`;
}

/** sha256 hex of the canonical JSON of what is sent. */
export function sentHash(request: unknown): string {
  return createHash("sha256").update(canonicalJson(request), "utf8").digest("hex");
}
