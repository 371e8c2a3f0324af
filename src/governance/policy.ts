/**
 * Tenant policy documents: YAML/JSON text (or an already-parsed object) → a validated, normalized document →
 * a `CompiledPolicy` the governor evaluates without further parsing. CEL conditions are parsed, statically
 * checked and planned here, once; a policy that would only fail at evaluation time is refused at `put` time
 * wherever that can be known in advance.
 *
 * ```yaml
 * default: allow              # allow | deny | requires_approval when no rule matches (default allow)
 * over_budget: deny           # deny | requires_approval for the built-in budget guard (default deny)
 * clearance:                  # destination ceilings; a hop whose clearance floor exceeds its ceiling is denied
 *   "role:intern": 1
 *   "team:*": 3               # `*` matches any run of characters
 * rules:                      # first match wins
 *   - id: approve-publish     # required, unique; `builtin:` is reserved
 *     action: dispatch        # optional: an action type or a list of them
 *     destination: "role:publish*"   # optional: a glob over "kind:id" or a list of globs
 *     when: "hop.cost > 5.0 || hop.approval_hint"   # optional CEL, must be boolean
 *     verdict: requires_approval
 *     reason: "publishing needs a human"             # required
 * ```
 *
 * CEL sees one variable, `hop`, a map with the fields of {@link HOP_CEL_FIELDS}. `hop.task_budget` is `null`
 * when the task is unbounded, so write `hop.task_budget != null && hop.task_cost > hop.task_budget * 0.8`;
 * comparing a null budget with a number is a runtime error, which the governor turns into a deny (fail closed).
 * The string extension functions (`lowerAscii`, `split`, …) are available.
 *
 * Conditions are bounded (cel-limits.ts): at put time by size, nesting depth, comprehension nesting, literal sizes,
 * `matches` patterns (literal, bounded expanded size) and an estimated worst-case cost; at evaluation time by a step
 * budget, which `matches` is charged against too, past which the rule denies (fail closed).
 */
import { parseDocument } from "yaml";
import { ACTION_TYPES, type ActionType, type VerdictKind } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { CelLimits } from "./cel-limits.js";
import { closest, compileCondition, type CompiledCondition } from "./policy-cel.js";

export { HOP_CEL_FIELDS, type CompiledCondition, type HopCelValue } from "./policy-cel.js";

export type OverBudgetVerdict = "deny" | "requires_approval";

export interface PolicyRuleDocument {
  id: string;
  description?: string;
  action?: ActionType[];
  destination?: string[];
  when?: string;
  verdict: VerdictKind;
  reason: string;
}

/** The normalized document: every default spelled out, single values turned into lists. JSON-safe. */
export interface PolicyDocument {
  description?: string;
  default: VerdictKind;
  over_budget: OverBudgetVerdict;
  clearance: Record<string, number>;
  rules: PolicyRuleDocument[];
}

export interface DestinationGlob {
  pattern: string;
  /** Non-wildcard characters: the more, the more specific. */
  literalChars: number;
  matches(destination: string): boolean;
}

export interface ClearanceCeiling extends DestinationGlob {
  ceiling: number;
}

export interface CompiledRule {
  id: string;
  actions: ReadonlySet<ActionType> | null;
  destinations: readonly DestinationGlob[] | null;
  when: CompiledCondition | null;
  verdict: VerdictKind;
  reason: string;
}

export interface CompiledPolicy {
  document: PolicyDocument;
  defaultVerdict: VerdictKind;
  overBudget: OverBudgetVerdict;
  clearance: readonly ClearanceCeiling[];
  rules: readonly CompiledRule[];
}

export interface CompilePolicyOptions {
  /** Lets the built-in default policy use `builtin:` rule ids; tenants cannot. */
  allowBuiltinIds?: boolean;
  /** Cost limits of CEL conditions. @defaultValue DEFAULT_CEL_LIMITS */
  celLimits?: CelLimits;
  /**
   * Refuse conditions over the store-time limits (size, nesting, estimated cost). Set false only to load a policy
   * stored earlier, which must keep loading; its evaluations are still bounded by the run-time budget.
   * @defaultValue true
   */
  enforceStoreLimits?: boolean;
}

const VERDICTS: readonly VerdictKind[] = ["allow", "deny", "requires_approval"];
const OVER_BUDGET: readonly OverBudgetVerdict[] = ["deny", "requires_approval"];
const TOP_KEYS = ["description", "default", "over_budget", "clearance", "rules"];
const RULE_KEYS = ["id", "description", "action", "destination", "when", "verdict", "reason"];
const RULE_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const DESTINATION_GLOB_RE = /^(?:\*|(?:role|team|foreign|\*):[A-Za-z0-9_.*-]+)$/;
const MAX_RULES = 1000;
const MAX_CONDITION_CHARS = 4096;

/** Validates and compiles a policy. Throws SwitchyardError INVALID_POLICY with `details.path` on any problem. */
export function compilePolicy(input: unknown, options: CompilePolicyOptions = {}): CompiledPolicy {
  const raw = typeof input === "string" ? parsePolicyText(input) : input;
  // Frozen: one compiled policy is shared by every hop of a tenant (and the built-in one by all tenants).
  const document = deepFreeze(normalizePolicyDocument(raw, options));
  return deepFreeze({
    document,
    defaultVerdict: document.default,
    overBudget: document.over_budget,
    clearance: Object.entries(document.clearance).map(([pattern, ceiling]) => ({ ...destinationGlob(pattern), ceiling })),
    rules: document.rules.map((rule, i) => ({
      id: rule.id,
      actions: rule.action ? new Set(rule.action) : null,
      destinations: rule.destination ? rule.destination.map(destinationGlob) : null,
      when:
        rule.when === undefined
          ? null
          : compileCondition(rule.when, `rules[${i}].when`, invalid, {
              ruleId: rule.id,
              ...(options.celLimits ? { limits: options.celLimits } : {}),
              ...(options.enforceStoreLimits === false ? { enforceStoreLimits: false } : {}),
            }),
      verdict: rule.verdict,
      reason: rule.reason,
    })),
  });
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value) && !(value instanceof Set)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export function destinationGlob(pattern: string): DestinationGlob {
  const source = pattern.split("*").map((part) => part.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&")).join(".*");
  const re = new RegExp(`^${source}$`);
  return { pattern, literalChars: pattern.replaceAll("*", "").length, matches: (d) => re.test(d) };
}

function invalid(path: string, message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidPolicy, path ? `${path}: ${message}` : message, { details: { path } });
}

function parsePolicyText(text: string): unknown {
  // YAML is a superset of JSON, so one parser takes both; duplicate keys are errors.
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const first = doc.errors[0];
  if (first) throw invalid("", `the policy is not valid YAML/JSON: ${first.message.trim()}`);
  return doc.toJS({ maxAliasCount: 100 });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "object") return "a mapping";
  return `${typeof value} ${String(value)}`;
}

function rejectUnknownKeys(obj: Record<string, unknown>, allowed: readonly string[], prefix: string): void {
  for (const key of Object.keys(obj)) {
    if (allowed.includes(key)) continue;
    const hint = closest(key, allowed);
    throw invalid(prefix + key, `unknown key '${key}'${hint ? ` (did you mean '${hint}'?)` : ""}; allowed: ${allowed.join(", ")}`);
  }
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], path: string, what: string): T {
  if (typeof value === "string" && (allowed as readonly string[]).includes(value)) return value as T;
  const hint = typeof value === "string" ? closest(value, allowed) : undefined;
  throw invalid(path, `${describe(value)} is not a valid ${what}${hint ? ` (did you mean '${hint}'?)` : ""}; use one of ${allowed.join(", ")}`);
}

function nonEmptyString(value: unknown, path: string, what: string): string {
  if (typeof value !== "string" || value.trim() === "") throw invalid(path, `${what} must be a non-empty string, got ${describe(value)}`);
  return value;
}

function stringList(value: unknown, path: string): { items: string[]; paths: string[] } {
  if (typeof value === "string") return { items: [value], paths: [path] };
  if (!Array.isArray(value) || value.length === 0) throw invalid(path, `expected a string or a non-empty list of strings, got ${describe(value)}`);
  return { items: value as string[], paths: value.map((_, i) => `${path}[${i}]`) };
}

function checkGlob(pattern: unknown, path: string): string {
  if (typeof pattern !== "string" || !DESTINATION_GLOB_RE.test(pattern)) {
    throw invalid(path, `${describe(pattern)} is not a destination pattern; write role:NAME, team:NAME or foreign:KEY, with * as a wildcard (e.g. "role:publish*", "team:*")`);
  }
  return pattern;
}

function normalizePolicyDocument(raw: unknown, options: CompilePolicyOptions): PolicyDocument {
  if (!isPlainObject(raw)) throw invalid("", `a policy must be a mapping with keys such as default, clearance and rules; got ${describe(raw)}`);
  rejectUnknownKeys(raw, TOP_KEYS, "");
  const document: PolicyDocument = {
    default: raw.default === undefined ? "allow" : oneOf(raw.default, VERDICTS, "default", "verdict"),
    over_budget: raw.over_budget === undefined ? "deny" : oneOf(raw.over_budget, OVER_BUDGET, "over_budget", "over_budget verdict"),
    clearance: normalizeClearance(raw.clearance),
    rules: [],
  };
  if (raw.description !== undefined) document.description = nonEmptyString(raw.description, "description", "description");
  if (raw.rules !== undefined && raw.rules !== null) {
    if (!Array.isArray(raw.rules)) throw invalid("rules", `rules must be a list, got ${describe(raw.rules)}`);
    if (raw.rules.length > MAX_RULES) throw invalid("rules", `at most ${MAX_RULES} rules are allowed, got ${raw.rules.length}`);
    const seen = new Map<string, number>();
    raw.rules.forEach((rule, i) => {
      const normalized = normalizeRule(rule, `rules[${i}]`, options);
      const earlier = seen.get(normalized.id);
      if (earlier !== undefined) throw invalid(`rules[${i}].id`, `duplicate rule id '${normalized.id}' (already used by rules[${earlier}])`);
      seen.set(normalized.id, i);
      document.rules.push(normalized);
    });
  }
  return document;
}

function normalizeClearance(raw: unknown): Record<string, number> {
  if (raw === undefined || raw === null) return {};
  if (!isPlainObject(raw)) throw invalid("clearance", `clearance must be a mapping of destination pattern to ceiling, got ${describe(raw)}`);
  const out: Record<string, number> = {};
  for (const [pattern, ceiling] of Object.entries(raw)) {
    const path = `clearance[${JSON.stringify(pattern)}]`;
    checkGlob(pattern, path);
    if (typeof ceiling !== "number" || !Number.isSafeInteger(ceiling) || ceiling < 0) {
      throw invalid(path, `a clearance ceiling must be a whole number >= 0, got ${describe(ceiling)}`);
    }
    out[pattern] = ceiling;
  }
  return out;
}

function normalizeRule(raw: unknown, path: string, options: CompilePolicyOptions): PolicyRuleDocument {
  if (!isPlainObject(raw)) throw invalid(path, `a rule must be a mapping with id, verdict and reason; got ${describe(raw)}`);
  rejectUnknownKeys(raw, RULE_KEYS, `${path}.`);
  const id = nonEmptyString(raw.id, `${path}.id`, "rule id");
  if (!RULE_ID_RE.test(id)) throw invalid(`${path}.id`, `rule id '${id}' may use letters, digits and _ . : - (at most 128 characters)`);
  if (id.startsWith("builtin:") && !options.allowBuiltinIds) throw invalid(`${path}.id`, `rule ids starting with 'builtin:' are reserved`);
  if (raw.verdict === undefined) throw invalid(`${path}.verdict`, `a rule needs a verdict: ${VERDICTS.join(", ")}`);
  const rule: PolicyRuleDocument = {
    id,
    verdict: oneOf(raw.verdict, VERDICTS, `${path}.verdict`, "verdict"),
    reason: nonEmptyString(raw.reason, `${path}.reason`, "reason (shown to whoever is denied or asked to approve)"),
  };
  if (raw.description !== undefined) rule.description = nonEmptyString(raw.description, `${path}.description`, "description");
  if (raw.action !== undefined) {
    const { items, paths } = stringList(raw.action, `${path}.action`);
    rule.action = [...new Set(items.map((a, i) => oneOf(a, ACTION_TYPES, paths[i]!, "action type")))];
  }
  if (raw.destination !== undefined) {
    const { items, paths } = stringList(raw.destination, `${path}.destination`);
    rule.destination = [...new Set(items.map((d, i) => checkGlob(d, paths[i]!)))];
  }
  if (raw.when !== undefined) {
    const when = nonEmptyString(raw.when, `${path}.when`, "a condition");
    if (when.length > MAX_CONDITION_CHARS) throw invalid(`${path}.when`, `a condition may be at most ${MAX_CONDITION_CHARS} characters`);
    rule.when = when;
  }
  return rule;
}
