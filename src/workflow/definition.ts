/**
 * Workflow definitions: the YAML/JSON a tenant writes (snake_case) → the validated, normalised WorkflowDefinition
 * the coordinator runs (camelCase, every default filled in). Validation collects every problem before throwing so a
 * tenant can fix a file in one pass; each problem names the field (`steps[2].needs[0]`) it is about.
 */
import { createHash } from "node:crypto";
import { formatDestination, parseDestination, type StepDefinition, type WorkflowDefinition } from "../domain.js";
import { findDependencyCycles } from "./graph.js";
import { invalidWorkflow, type WorkflowProblem } from "./problems.js";
import { decodeSource } from "./source.js";
import { editDistance } from "../edit-distance.js";
import { schemaProblem } from "./step-schemas.js";
import { concurrencyProblem } from "../core/concurrency-key.js";
import { stableJson } from "../stable-json.js";

export { topologicalOrder, dependents } from "./graph.js";
export { MAX_SOURCE_CHARS, type WorkflowProblem } from "./problems.js";

export const WORKFLOW_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;
export const STEP_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** Guards against a tenant submitting something no coordinator should hold in memory. */
export const MAX_STEPS = 1000;
const MAX_DESCRIPTION_CHARS = 4096;
const MAX_DURATION_MS = 24 * 60 * 60 * 1000;
const MAX_RETRIES = 10;
const MAX_CLEARANCE = 10;
const DEFAULT_BACKOFF_MS = 1000;

/** The keys a definition and a step may have; schemas/workflow.schema.json lists the same (a test keeps them equal). */
export const ROOT_KEYS = ["name", "description", "budget", "steps"] as const;
export const STEP_KEYS = ["id", "to", "needs", "timeout", "retries", "backoff", "cost_estimate", "clearance", "approval", "input_schema", "output_schema", "priority", "concurrency"] as const;
// Words people reach for from other workflow tools; a suggestion beats a bare "unknown key".
const KEY_ALIASES: Record<string, string> = {
  depends_on: "needs", dependsOn: "needs", depends: "needs", after: "needs", requires: "needs",
  destination: "to", queue: "to", target: "to", role: "to", name: "id", step: "id",
  retry: "retries", max_retries: "retries", attempts: "retries", cost: "cost_estimate",
  timeout_ms: "timeout", backoff_ms: "backoff", requires_approval: "approval", approve: "approval",
  title: "name", desc: "description", step_list: "steps", max_cost: "budget",
  input: "input_schema", output: "output_schema", schema: "input_schema", inputs: "input_schema", outputs: "output_schema",
  concurrency_key: "concurrency", concurrencyKey: "concurrency", concurrency_limit: "concurrency",
};

export interface ParseWorkflowOptions {
  /** How to read a string source. Default: JSON when it starts with `{`, YAML otherwise. */
  format?: "yaml" | "json";
}

/**
 * Parses and validates a workflow definition. A string is read as YAML or JSON; an object is taken as already
 * decoded (snake_case keys, as in a file). Throws INVALID_WORKFLOW listing every problem found.
 */
export function parseWorkflowDefinition(source: string | object, options: ParseWorkflowOptions = {}): WorkflowDefinition {
  const raw = typeof source === "string" ? decodeSource(source, options.format) : source;
  const problems: WorkflowProblem[] = [];
  const definition = readDefinition(raw, problems);
  if (problems.length > 0 || !definition) throw invalidWorkflow(problems);
  return definition;
}

/** Renders a definition back in the file format (snake_case, explicit needs), e.g. for `workflow get`. */
export function workflowToSource(def: WorkflowDefinition): Record<string, unknown> {
  const steps = def.steps.map((s) => ({
    id: s.id, to: formatDestination(s.to), needs: [...s.needs], ...(s.timeoutMs != null ? { timeout: s.timeoutMs } : {}),
    retries: s.retries, backoff: s.backoffMs, cost_estimate: s.costEstimate, clearance: s.clearance, approval: s.approval,
    ...schemasOf(s, "input_schema", "output_schema"), ...(s.priority !== undefined ? { priority: s.priority } : {}),
    ...(s.concurrency !== undefined ? { concurrency: { ...s.concurrency } } : {}),
  }));
  const optional = { ...(def.description != null ? { description: def.description } : {}), ...(def.budget != null ? { budget: def.budget } : {}) };
  return { name: def.name, ...optional, steps };
}

/**
 * The definition reduced to what it means: known fields only, defaults explicit, `needs` sorted (their order
 * carries no meaning). Two definitions that run the same way have equal canonical forms.
 */
export function canonicalDefinition(def: WorkflowDefinition): WorkflowDefinition {
  const steps = def.steps.map((s): StepDefinition => ({
    id: s.id, to: { kind: s.to.kind, id: s.to.id }, needs: [...s.needs].sort(), timeoutMs: s.timeoutMs ?? null,
    retries: s.retries, backoffMs: s.backoffMs, costEstimate: s.costEstimate, clearance: s.clearance, approval: s.approval,
    ...schemasOf(s, "inputSchema", "outputSchema"), ...(s.priority !== undefined ? { priority: s.priority } : {}),
    ...(s.concurrency !== undefined ? { concurrency: { key: s.concurrency.key, limit: s.concurrency.limit } } : {}),
  }));
  return { name: def.name, ...(def.description != null ? { description: def.description } : {}), budget: def.budget ?? null, steps };
}

/**
 * A step's schemas under the given key names, only those it has: a definition without schemas keeps the canonical
 * form (and digest) it had before schemas existed, so resubmitting it still finds the stored version.
 */
function schemasOf<I extends string, O extends string>(s: StepDefinition, input: I, output: O): Partial<Record<I | O, unknown>> {
  return { ...(s.inputSchema != null ? { [input]: s.inputSchema } : {}), ...(s.outputSchema != null ? { [output]: s.outputSchema } : {}) } as Partial<Record<I | O, unknown>>;
}

/** sha256 (hex) of the canonical definition as JSON with sorted keys: equal for definitions that run the same way. */
export function definitionDigest(def: WorkflowDefinition): string {
  return createHash("sha256").update(stableJson(canonicalDefinition(def))).digest("hex");
}


// ---------------------------------------------------------------------------------------------------------------
// Validation

type RawObject = Record<string, unknown>;

function readDefinition(raw: unknown, problems: WorkflowProblem[]): WorkflowDefinition | undefined {
  const add = (path: string, reason: string) => problems.push({ path, reason });
  if (!isPlainObject(raw)) {
    const got = raw == null ? "an empty document" : describe(raw);
    add("", `a workflow definition must be a mapping with "name" and "steps", got ${got}`);
    return undefined;
  }
  checkKeys(raw, ROOT_KEYS, "", add);

  let name = "";
  if (raw.name == null) add("name", "is required");
  else if (typeof raw.name !== "string") add("name", `must be a string, got ${describe(raw.name)}`);
  else if (!WORKFLOW_NAME_PATTERN.test(raw.name)) {
    add("name", `must be 1-64 lowercase letters, digits, "_" or "-", starting with a letter or digit, got ${describe(raw.name)}`);
  } else name = raw.name;

  let description: string | undefined;
  if (raw.description != null) {
    if (typeof raw.description !== "string") add("description", `must be a string, got ${describe(raw.description)}`);
    else if (raw.description.length > MAX_DESCRIPTION_CHARS) add("description", `must be at most ${MAX_DESCRIPTION_CHARS} characters`);
    else description = raw.description;
  }

  let budget: number | null = null;
  if (raw.budget != null) {
    if (typeof raw.budget !== "number" || !Number.isFinite(raw.budget) || raw.budget <= 0) {
      add("budget", `must be a number greater than 0 (cost units), got ${describe(raw.budget)}`);
    } else budget = raw.budget;
  }

  const steps = readSteps(raw.steps, add);
  if (steps) checkNeeds(steps, add);
  return { name, ...(description !== undefined ? { description } : {}), budget, steps: steps?.map((s) => s.step) ?? [] };
}

interface ReadStep {
  step: StepDefinition;
  /** The step's id when it is valid, else undefined (already reported). */
  id: string | undefined;
  /** Explicit `needs` entries with their paths; undefined when the step relies on the default. */
  explicitNeeds: Array<{ value: unknown; path: string }> | undefined;
}

function readSteps(raw: unknown, add: (path: string, reason: string) => void): ReadStep[] | undefined {
  if (raw == null) return void add("steps", "is required: a workflow needs at least one step");
  if (!Array.isArray(raw)) return void add("steps", `must be a list of steps, got ${describe(raw)}`);
  if (raw.length === 0) return void add("steps", "must list at least one step");
  if (raw.length > MAX_STEPS) return void add("steps", `has ${raw.length} steps, more than the limit of ${MAX_STEPS}`);
  const steps: ReadStep[] = [];
  raw.forEach((item, index) => steps.push(readStep(item, `steps[${index}]`, add)));
  return steps;
}

function readStep(raw: unknown, base: string, add: (path: string, reason: string) => void): ReadStep {
  const step: StepDefinition = {
    id: "", to: { kind: "role", id: "" }, needs: [], timeoutMs: null, retries: 0,
    backoffMs: DEFAULT_BACKOFF_MS, costEstimate: 0, clearance: 0, approval: false,
  };
  if (!isPlainObject(raw)) {
    add(base, `must be a mapping with "id" and "to", got ${describe(raw)}`);
    return { step, id: undefined, explicitNeeds: [] };
  }
  checkKeys(raw, STEP_KEYS, base, add);
  const at = (key: string) => `${base}.${key}`;

  let id: string | undefined;
  if (raw.id == null) add(at("id"), "is required");
  else if (typeof raw.id !== "string") add(at("id"), `must be a string, got ${describe(raw.id)}`);
  else if (!STEP_ID_PATTERN.test(raw.id)) {
    add(at("id"), `must be 1-64 letters, digits, "_" or "-", starting with a letter or digit, got ${describe(raw.id)}`);
  } else id = step.id = raw.id;

  if (raw.to == null) add(at("to"), "is required: role:NAME, team:NAME or foreign:KEY");
  else if (typeof raw.to !== "string") add(at("to"), `must be a string like role:NAME, got ${describe(raw.to)}`);
  else {
    const to = parseDestination(raw.to);
    if (to) step.to = to;
    else add(at("to"), destinationProblem(raw.to));
  }

  let explicitNeeds: ReadStep["explicitNeeds"];
  if (raw.needs !== undefined) {
    // A single id is accepted as a one-element list, as other workflow tools do.
    if (typeof raw.needs === "string") explicitNeeds = [{ value: raw.needs, path: at("needs") }];
    else if (Array.isArray(raw.needs)) explicitNeeds = raw.needs.map((value, i) => ({ value, path: `${at("needs")}[${i}]` }));
    else {
      add(at("needs"), `must be a list of step ids (use [] for none), got ${describe(raw.needs)}`);
      explicitNeeds = [];
    }
  }

  if (raw.timeout != null) step.timeoutMs = readDuration(raw.timeout, at("timeout"), false, add) ?? null;
  if (raw.backoff != null) step.backoffMs = readDuration(raw.backoff, at("backoff"), true, add) ?? DEFAULT_BACKOFF_MS;
  if (raw.retries != null) step.retries = readInteger(raw.retries, at("retries"), MAX_RETRIES, add);
  if (raw.clearance != null) step.clearance = readInteger(raw.clearance, at("clearance"), MAX_CLEARANCE, add);
  if (raw.priority != null) {
    // Orders the tenant's held steps (src/fairness/); absent means the middle, 3.
    if (typeof raw.priority !== "number" || !Number.isInteger(raw.priority) || raw.priority < 1 || raw.priority > 5) add(at("priority"), `must be a whole number from 1 to 5 (higher goes first), got ${describe(raw.priority)}`);
    else step.priority = raw.priority;
  }
  if (raw.concurrency != null) {
    // Isolates the tenant's own customers from each other (src/core/concurrency-key.ts).
    const problem = concurrencyProblem(raw.concurrency);
    if (problem) add(`${at("concurrency")}${problem.path}`, problem.reason);
    else {
      const c = raw.concurrency as { key: string; limit: number };
      step.concurrency = { key: c.key, limit: c.limit };
    }
  }
  if (raw.cost_estimate != null) {
    const cost = raw.cost_estimate;
    if (typeof cost !== "number" || !Number.isFinite(cost) || cost < 0) {
      add(at("cost_estimate"), `must be a number of at least 0 (cost units), got ${describe(cost)}`);
    } else step.costEstimate = cost;
  }
  if (raw.approval != null) {
    if (typeof raw.approval !== "boolean") add(at("approval"), `must be true or false, got ${describe(raw.approval)}`);
    else step.approval = raw.approval;
  }
  for (const [key, field] of [["input_schema", "inputSchema"], ["output_schema", "outputSchema"]] as const) {
    if (raw[key] == null) continue;
    const problem = schemaProblem(raw[key]);
    if (problem) add(at(key), problem);
    else step[field] = raw[key];
  }
  return { step, id, explicitNeeds };
}

/** Resolves `needs` (explicit or the default: the previous step), then checks the graph is a DAG. */
function checkNeeds(steps: ReadStep[], add: (path: string, reason: string) => void): void {
  const firstIndex = new Map<string, number>();
  steps.forEach((s, i) => {
    if (s.id === undefined) return;
    const first = firstIndex.get(s.id);
    if (first === undefined) firstIndex.set(s.id, i);
    else add(`steps[${i}].id`, `duplicate step id "${s.id}" (already used by steps[${first}])`);
  });

  // Where each dependency edge was written, so a cycle can point at the entry that closes it.
  const edgePaths = new Map<string, string>();
  steps.forEach((s, i) => {
    if (s.explicitNeeds === undefined) {
      const previous = steps[i - 1]?.id;
      s.step.needs = previous === undefined ? [] : [previous];
      return;
    }
    const needs: string[] = [];
    for (const { value, path } of s.explicitNeeds) {
      if (typeof value !== "string") add(path, `must be a step id, got ${describe(value)}`);
      else if (value === s.id) add(path, `step "${value}" cannot need itself`);
      else if (!firstIndex.has(value)) add(path, `unknown step "${value}"`);
      else if (needs.includes(value)) add(path, `"${value}" is listed twice`);
      else {
        needs.push(value);
        if (s.id !== undefined && firstIndex.get(s.id) === i) edgePaths.set(`${s.id}\n${value}`, path);
      }
    }
    s.step.needs = needs;
  });

  const graph = steps.filter((s, i) => s.id !== undefined && firstIndex.get(s.id) === i).map((s) => s.step);
  for (const cycle of findDependencyCycles(graph)) {
    const path = edgePaths.get(`${cycle[0]}\n${cycle[1]}`) ?? `steps[${firstIndex.get(cycle[0]!)}].needs`;
    add(path, `needs form a cycle: ${cycle.join(" -> ")} (each step needs the next)`);
  }
}

const DURATION_PATTERN = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function readDuration(value: unknown, path: string, allowZero: boolean, add: (path: string, reason: string) => void): number | undefined {
  const expected = `a duration like "500ms", "30s", "5m" or "1h", or a number of milliseconds`;
  let ms: number;
  if (typeof value === "number") ms = value;
  else if (typeof value === "string" && DURATION_PATTERN.test(value.trim())) {
    const [, amount, unit] = DURATION_PATTERN.exec(value.trim())!;
    ms = Number(amount) * UNIT_MS[unit!]!;
  } else return void add(path, `must be ${expected}, got ${describe(value)}`);
  ms = Math.round(ms);
  if (!Number.isFinite(ms) || ms < 0 || (ms === 0 && !allowZero)) {
    return void add(path, `must be ${allowZero ? "at least 0" : "greater than 0"}, got ${describe(value)}`);
  }
  if (ms > MAX_DURATION_MS) return void add(path, `must be at most 24h, got ${describe(value)}`);
  return ms;
}

function readInteger(value: unknown, path: string, max: number, add: (path: string, reason: string) => void): number {
  if (typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= max) return value;
  add(path, `must be a whole number from 0 to ${max}, got ${describe(value)}`);
  return 0;
}

function destinationProblem(text: string): string {
  const expected = "role:NAME, team:NAME or foreign:KEY";
  const colon = text.indexOf(":");
  if (colon < 0) return `must be ${expected}, got ${describe(text)}`;
  const kind = text.slice(0, colon);
  const name = text.slice(colon + 1);
  if (kind !== "role" && kind !== "team" && kind !== "foreign") {
    return `unknown destination kind "${kind}" in ${describe(text)} (expected ${expected})`;
  }
  const noun = kind === "foreign" ? "agent key" : `${kind} name`;
  if (name === "") return `${describe(text)} has no ${noun} after the colon`;
  return `invalid ${noun} "${name}": use 1-128 letters, digits, "_", "-" or ".", starting with a letter or digit`;
}

function checkKeys(raw: RawObject, known: readonly string[], base: string, add: (path: string, reason: string) => void): void {
  for (const key of Object.keys(raw)) {
    if (known.includes(key)) continue;
    const path = /^[A-Za-z_][\w-]*$/.test(key) ? (base ? `${base}.${key}` : key) : `${base}[${JSON.stringify(key)}]`;
    const suggestion = suggestKey(key, known);
    add(path, `unknown key "${key}"${suggestion ? ` (did you mean "${suggestion}"?)` : ""}`);
  }
}

function suggestKey(key: string, known: readonly string[]): string | undefined {
  const alias = KEY_ALIASES[key];
  if (alias && known.includes(alias)) return alias;
  const snake = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  if (known.includes(snake)) return snake;
  const tolerance = key.length <= 3 ? 1 : 2;
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate);
    if (distance <= tolerance && (!best || distance < best.distance)) best = { key: candidate, distance };
  }
  return best?.key;
}

function isPlainObject(value: unknown): value is RawObject {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (typeof value === "object") return isPlainObject(value) ? "a mapping" : `a ${value.constructor?.name ?? "value"}`;
  return String(value);
}
