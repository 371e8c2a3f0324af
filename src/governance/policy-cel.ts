/**
 * CEL conditions of policy rules: the `hop` variable's shape, and compiling a condition once at put time —
 * parsing, a small static type check (unknown variables, fields and functions, non-boolean results) and a probe
 * evaluation — so that a policy that could only fail at evaluation time is refused when it is stored.
 */
import { celEnv, isCelError, parse, plan, type CelResult } from "@bufbuild/cel";
import { editDistance } from "../edit-distance.js";
import { CelMeter, checkConditionLimits, DEFAULT_CEL_LIMITS, instrumentForBudget, meteredFunctions, type CelLimits } from "./cel-limits.js";

/**
 * The `hop` variable of CEL conditions: each field's CEL type. `task_budget` is `dyn` because it is a double or,
 * for an unbounded task, null.
 */
export const HOP_CEL_FIELDS = {
  action: "string", org_id: "string", task_id: "string", step_id: "string", workflow: "string",
  destination: "string", destination_kind: "string", destination_id: "string",
  clearance: "int", cost: "double", task_cost: "double", task_budget: "dyn", approval_hint: "bool", delegation_depth: "int",
  tenant_daily_cost: "double", tenant_daily_budget: "dyn", egress_enabled: "bool",
} as const;

interface CelTypeValues {
  string: string;
  int: bigint; // CEL ints are bigint in cel-es
  double: number;
  bool: boolean;
  dyn: number | null;
}

/** The JS value bound to `hop` (see governor.ts `hopCelValue`). */
export type HopCelValue = { [K in keyof typeof HOP_CEL_FIELDS]: CelTypeValues[(typeof HOP_CEL_FIELDS)[K]] };

export interface CompiledCondition {
  source: string;
  /** Never throws for CEL errors: they come back as a CelError value. */
  evaluate(hop: HopCelValue): CelResult;
}

// One meter for every condition: evaluation is synchronous, so no two evaluations share it at once.
const meter = new CelMeter();
const celEnvironment = celEnv({ funcs: meteredFunctions(meter, DEFAULT_CEL_LIMITS.maxStringChars) });
type CelExpr = ReturnType<typeof parse>["expr"];
/** Calls that are part of the language (macros, logic) rather than functions in the environment. */
const LANGUAGE_CALLS = new Set(["_&&_", "_||_", "_?_:_", "@not_strictly_false", "_[_]", "_[?_]", "@mapInsert"]);

class CelCheckError extends Error {}

export interface CompileConditionOptions {
  /** The rule the condition belongs to, named in errors. */
  ruleId?: string;
  /** @defaultValue DEFAULT_CEL_LIMITS */
  limits?: CelLimits;
  /**
   * Whether the store-time limits apply (size, nesting, estimated cost). Off when loading a policy that was stored
   * already (it must keep loading); the run-time budget applies either way.
   * @defaultValue true
   */
  enforceStoreLimits?: boolean;
}

export function compileCondition(
  source: string,
  path: string,
  invalid: (path: string, message: string) => Error,
  options: CompileConditionOptions = {},
): CompiledCondition {
  const limits = options.limits ?? DEFAULT_CEL_LIMITS;
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (error) {
    throw invalid(path, `the condition does not compile: ${(error as Error).message.replace(/^<input>:/, "at ")}`);
  }
  try {
    const type = inferType(parsed.expr, new Map());
    if (type !== "bool" && type !== "dyn") throw new CelCheckError(`the condition must be a boolean expression, but it yields ${type}`);
  } catch (error) {
    if (error instanceof CelCheckError) throw invalid(path, error.message);
    throw error;
  }
  if (options.enforceStoreLimits !== false && parsed.expr) {
    const problem = checkConditionLimits(parsed.expr, limits, Object.keys(HOP_CEL_FIELDS).length);
    if (problem) throw invalid(path, `${options.ruleId ? `rule '${options.ruleId}': ` : ""}the condition is too expensive to evaluate on every hop: ${problem.message} (limit ${problem.limit})`);
  }
  const program = plan(celEnvironment, parsed.expr ? { ...parsed, expr: instrumentForBudget(parsed.expr) } : parsed);
  const evaluate = (hop: HopCelValue): CelResult => meter.run(limits.evaluationBudget, () => program({ hop }));
  // A probe catches what static typing cannot (e.g. a ternary that yields a string on a typical hop).
  const probe = evaluate(PROBE_HOP);
  if (!isCelError(probe) && typeof probe !== "boolean") throw invalid(path, `the condition must be a boolean expression, but it yields ${typeof probe}`);
  if (isCelError(probe) && /unbound function|unresolved attribute/.test(probe.message)) throw invalid(path, `the condition does not compile: ${probe.message}`);
  return { source, evaluate };
}

const PROBE_HOP: HopCelValue = {
  action: "dispatch", org_id: "org", task_id: "task", step_id: "step", workflow: "workflow@1", destination: "role:probe",
  destination_kind: "role", destination_id: "probe", clearance: 0n, cost: 0, task_cost: 0, task_budget: null,
  approval_hint: false, delegation_depth: 0n, tenant_daily_cost: 0, tenant_daily_budget: null, egress_enabled: false,
};

/**
 * A small static type inference over the parsed expression: enough to name unknown variables, unknown `hop`
 * fields, unknown functions and non-boolean conditions at put time. Anything it cannot know is `dyn` and left
 * to the runtime (where errors fail closed).
 */
function inferType(expr: CelExpr, scope: ReadonlyMap<string, string>): string {
  const kind = expr.exprKind;
  switch (kind.case) {
    case "constExpr":
      return CONST_TYPES[kind.value.constantKind.case ?? ""] ?? "dyn";
    case "identExpr": {
      const found = scope.get(kind.value.name);
      if (found !== undefined) return found;
      if (kind.value.name === "hop") return "map";
      throw new CelCheckError(`unknown variable '${kind.value.name}'; a condition can only use 'hop' (e.g. hop.cost, hop.destination)`);
    }
    case "selectExpr": {
      const { operand, field, testOnly } = kind.value;
      if (!operand) return "dyn";
      inferType(operand, scope);
      if (operand.exprKind.case === "identExpr" && operand.exprKind.value.name === "hop" && !scope.has("hop")) {
        const fieldType = (HOP_CEL_FIELDS as Record<string, string>)[field];
        if (fieldType === undefined) {
          const hint = closest(field, Object.keys(HOP_CEL_FIELDS));
          throw new CelCheckError(`unknown field hop.${field}${hint ? ` (did you mean hop.${hint}?)` : ""}; hop has ${Object.keys(HOP_CEL_FIELDS).join(", ")}`);
        }
        return testOnly ? "bool" : fieldType;
      }
      return testOnly ? "bool" : "dyn";
    }
    case "callExpr":
      return inferCallType(kind.value.function, kind.value.target, kind.value.args, scope);
    case "listExpr":
      for (const element of kind.value.elements) inferType(element, scope);
      return "list";
    case "structExpr":
      if (kind.value.messageName) throw new CelCheckError(`message construction (${kind.value.messageName}{…}) is not supported in conditions`);
      for (const entry of kind.value.entries) {
        if (entry.keyKind.case === "mapKey") inferType(entry.keyKind.value, scope);
        if (entry.value) inferType(entry.value, scope);
      }
      return "map";
    case "comprehensionExpr": {
      const c = kind.value;
      if (c.iterRange) inferType(c.iterRange, scope);
      const inner = new Map(scope);
      inner.set(c.iterVar, "dyn");
      if (c.iterVar2) inner.set(c.iterVar2, "dyn");
      inner.set(c.accuVar, c.accuInit ? inferType(c.accuInit, scope) : "dyn");
      if (c.loopCondition) inferType(c.loopCondition, inner);
      if (c.loopStep) inferType(c.loopStep, inner);
      return c.result ? inferType(c.result, inner) : "dyn";
    }
    default:
      return "dyn";
  }
}

const CONST_TYPES: Record<string, string> = {
  boolValue: "bool", int64Value: "int", uint64Value: "uint", doubleValue: "double", stringValue: "string", bytesValue: "bytes",
  nullValue: "null_type",
};

const OPERATOR_NAMES: Record<string, string> = {
  "_&&_": "&&", "_||_": "||", "!_": "!", "_==_": "==", "_!=_": "!=", "_<_": "<", "_<=_": "<=", "_>_": ">", "_>=_": ">=",
  "_+_": "+", "_-_": "-", "_*_": "*", "_/_": "/", "_%_": "%", "-_": "unary -", "@in": "in",
};

function inferCallType(fn: string, target: CelExpr | undefined, args: readonly CelExpr[], scope: ReadonlyMap<string, string>): string {
  const targetType = target ? inferType(target, scope) : undefined;
  const argTypes = args.map((a) => inferType(a, scope));
  const shown = OPERATOR_NAMES[fn] ?? fn;
  if (fn === "_&&_" || fn === "_||_" || fn === "!_") {
    argTypes.forEach((t) => {
      if (t !== "bool" && t !== "dyn") throw new CelCheckError(`the operands of ${shown} must be boolean, got ${t}`);
    });
    return "bool";
  }
  if (fn === "_?_:_") {
    if (argTypes[0] !== "bool" && argTypes[0] !== "dyn") throw new CelCheckError(`the condition of ?: must be boolean, got ${argTypes[0]}`);
    return argTypes[1] === argTypes[2] ? argTypes[1]! : "dyn";
  }
  if (fn === "@not_strictly_false") return "bool";
  if (LANGUAGE_CALLS.has(fn)) return "dyn";
  const group = celEnvironment.funcs.find(fn);
  if (!group) throw new CelCheckError(`unknown function '${fn}'`);
  const shape = [...group].filter((f) => (f.target !== undefined) === (target !== undefined) && f.arguments.length === args.length);
  if (shape.length === 0) throw new CelCheckError(`'${shown}' is not available ${target ? "as a method " : ""}with ${args.length} argument(s)`);
  const fits = (declared: string, actual: string | undefined) => actual === undefined || declared === "dyn" || actual === "dyn" || declared === actual;
  const typed = shape.filter((f) => fits(f.target?.name ?? "dyn", targetType) && f.arguments.every((a, i) => fits(a.name, argTypes[i])));
  if (typed.length === 0) {
    const operands = [...(targetType ? [targetType] : []), ...argTypes].join(", ");
    throw new CelCheckError(`'${shown}' cannot be applied to (${operands})`);
  }
  const results = new Set(typed.map((f) => f.result.name));
  return results.size === 1 ? [...results][0]! : "dyn";
}

/** The allowed word closest to `word` when it is plausibly a typo. */
export function closest(word: string, allowed: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const candidate of allowed) {
    const d = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

