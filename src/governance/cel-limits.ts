/**
 * Bounding what a CEL condition may cost, so one tenant's policy cannot stall the governor for every tenant.
 *
 * @bufbuild/cel 0.6.1 has no cost tracking, so we add two layers of our own:
 *
 * 1. At store time (`checkConditionLimits`): the parsed expression's size (nodes), nesting depth, comprehension
 *    nesting (`exists`/`all`/`map`/`filter` inside one another), list/map literal sizes, and a static worst-case
 *    cost estimate over the AST given the bounded inputs of a hop (its strings are short, `hop` has a fixed set of
 *    keys). A `matches` must have a string literal pattern of bounded length and expanded size (counted repetition
 *    multiplied out), and is estimated at (expanded size × the input's length bound). A condition over any limit is
 *    refused, naming the limit.
 * 2. At evaluation time (`instrumentForBudget` + `CelMeter`): every comprehension's loop condition is rewritten to
 *    first call `@budget(N)`, which charges the loop body's node count per iteration against a per-evaluation budget,
 *    and the string functions are wrapped to refuse results over `maxStringChars` and to charge their length (the
 *    extension functions, `+` on strings, `contains`, `startsWith`, `endsWith`). `matches` charges (expanded pattern
 *    size × input length) before it runs, and compiles each pattern once (cel-regex.ts): RE2 is linear in the input,
 *    but with the program's size as the factor. Past the budget, every further charge fails, so each enclosing loop
 *    stops at its next iteration; the evaluation then reports an error whatever the expression made of it, and the governor denies
 *    (fail closed). A policy that slipped past the store-time check — stored before these limits, or loaded with
 *    them switched off — is still bounded by this.
 *
 * `@budget` cannot be written by a tenant: the parser never yields a function name starting with `@`.
 */
import { celError, celFunc, celMethod, CelScalar, isCelError, type CelFunc, type CelResult } from "@bufbuild/cel";
import { strings } from "@bufbuild/cel/ext";
import { checkRegexPattern, literalString, matchesCall, RegexCache, regexMatchCost, regexProgramSize } from "./cel-regex.js";

type CelExpr = NonNullable<ReturnType<typeof import("@bufbuild/cel").parse>["expr"]>;

export interface CelLimits {
  /** Expression nodes after macro expansion. */
  maxNodes: number;
  /** Nesting depth of the expression tree. */
  maxDepth: number;
  /** Comprehensions (exists, all, exists_one, map, filter) nested inside one another. */
  maxComprehensionNesting: number;
  /** Elements of one list literal, entries of one map literal. */
  maxLiteralElements: number;
  /** Static worst-case cost estimate (node evaluations, loops multiplied out). */
  maxEstimatedCost: number;
  /** Cost units one evaluation may spend at run time before it fails closed. */
  evaluationBudget: number;
  /** Longest string a string function may produce. */
  maxStringChars: number;
  /** Longest pattern of a `matches`; the pattern must be a string literal. */
  maxRegexPatternChars: number;
  /** Expanded size of a `matches` pattern (about its compiled instructions; counted repetitions multiplied out). */
  maxRegexSize: number;
}

export const DEFAULT_CEL_LIMITS: CelLimits = {
  maxNodes: 1_000,
  maxDepth: 32,
  maxComprehensionNesting: 2,
  maxLiteralElements: 64,
  maxEstimatedCost: 50_000,
  evaluationBudget: 50_000,
  maxStringChars: 16 * 1024,
  maxRegexPatternChars: 256,
  maxRegexSize: 1_000,
};

/** Upper bound on a `hop` string field (ids, names, destinations are all far shorter). */
const HOP_STRING_BOUND = 256;
/** Iterations assumed for a range the estimate cannot size (e.g. an element of an outer list). */
const UNKNOWN_RANGE = 256;

const MACRO_NAMES = "exists, all, exists_one, map or filter";

/** What `checkConditionLimits` found over a limit: `limit` names the CelLimits field. */
export interface LimitProblem {
  limit: keyof CelLimits;
  message: string;
}

/** The first limit `expr` exceeds, or undefined. */
export function checkConditionLimits(expr: CelExpr, limits: CelLimits, hopFieldCount: number): LimitProblem | undefined {
  const shape = { nodes: 0, depth: 0, nesting: 0, literal: 0 };
  measure(expr, 1, 0, shape);
  if (shape.nodes > limits.maxNodes) return { limit: "maxNodes", message: `the condition has ${shape.nodes} expression nodes; at most ${limits.maxNodes} are allowed` };
  if (shape.depth > limits.maxDepth) return { limit: "maxDepth", message: `the condition nests ${shape.depth} levels deep; at most ${limits.maxDepth} are allowed` };
  if (shape.nesting > limits.maxComprehensionNesting) {
    return { limit: "maxComprehensionNesting", message: `the condition nests ${shape.nesting} comprehensions (${MACRO_NAMES}); at most ${limits.maxComprehensionNesting} are allowed` };
  }
  if (shape.literal > limits.maxLiteralElements) {
    return { limit: "maxLiteralElements", message: `a list or map literal of the condition has ${shape.literal} elements; at most ${limits.maxLiteralElements} are allowed` };
  }
  const regexProblem = checkRegexLimits(expr, limits);
  if (regexProblem) return regexProblem;
  const cost = estimateCost(expr, { hopFieldCount, maxStringChars: limits.maxStringChars });
  if (cost > limits.maxEstimatedCost) {
    return { limit: "maxEstimatedCost", message: `the condition may cost up to ${Math.round(cost)} evaluation steps on a hop; at most ${limits.maxEstimatedCost} are allowed (iterate over fewer or smaller lists)` };
  }
  return undefined;
}

/** The first `matches` whose pattern is computed, too long, or too large once its repetitions are multiplied out. */
function checkRegexLimits(expr: CelExpr | undefined, limits: CelLimits): LimitProblem | undefined {
  if (!expr) return undefined;
  const call = matchesCall(expr);
  if (call) {
    const problem = checkRegexPattern(literalString(call.pattern), limits);
    if (problem) return problem;
  }
  for (const child of children(expr)) {
    const problem = checkRegexLimits(child, limits);
    if (problem) return problem;
  }
  return undefined;
}

function children(expr: CelExpr): (CelExpr | undefined)[] {
  const kind = expr.exprKind;
  switch (kind.case) {
    case "selectExpr":
      return [kind.value.operand];
    case "callExpr":
      return [kind.value.target, ...kind.value.args];
    case "listExpr":
      return kind.value.elements;
    case "structExpr":
      return kind.value.entries.flatMap((e) => [e.keyKind.case === "mapKey" ? e.keyKind.value : undefined, e.value]);
    case "comprehensionExpr":
      return [kind.value.iterRange, kind.value.accuInit, kind.value.loopCondition, kind.value.loopStep, kind.value.result];
    default:
      return [];
  }
}

function measure(expr: CelExpr | undefined, depth: number, nesting: number, shape: { nodes: number; depth: number; nesting: number; literal: number }): void {
  if (!expr) return;
  shape.nodes++;
  shape.depth = Math.max(shape.depth, depth);
  const kind = expr.exprKind;
  switch (kind.case) {
    case "selectExpr":
      measure(kind.value.operand, depth + 1, nesting, shape);
      break;
    case "callExpr":
      measure(kind.value.target, depth + 1, nesting, shape);
      for (const arg of kind.value.args) measure(arg, depth + 1, nesting, shape);
      break;
    case "listExpr":
      shape.literal = Math.max(shape.literal, kind.value.elements.length);
      for (const element of kind.value.elements) measure(element, depth + 1, nesting, shape);
      break;
    case "structExpr":
      shape.literal = Math.max(shape.literal, kind.value.entries.length);
      for (const entry of kind.value.entries) {
        if (entry.keyKind.case === "mapKey") measure(entry.keyKind.value, depth + 1, nesting, shape);
        measure(entry.value, depth + 1, nesting, shape);
      }
      break;
    case "comprehensionExpr": {
      const c = kind.value;
      shape.nesting = Math.max(shape.nesting, nesting + 1);
      measure(c.iterRange, depth + 1, nesting, shape);
      measure(c.accuInit, depth + 1, nesting, shape);
      measure(c.loopCondition, depth + 1, nesting + 1, shape);
      measure(c.loopStep, depth + 1, nesting + 1, shape);
      measure(c.result, depth + 1, nesting, shape);
      break;
    }
    default:
      break;
  }
}

interface EstimateContext {
  hopFieldCount: number;
  maxStringChars: number;
  /** Length bounds of the loop variables in scope that are known to be short (e.g. parts of a split hop field). */
  stringBounds?: ReadonlyMap<string, number>;
}

/** Worst-case node evaluations: each comprehension's body counted once per element of its (bounded) range. */
export function estimateCost(expr: CelExpr | undefined, ctx: EstimateContext): number {
  if (!expr) return 0;
  const kind = expr.exprKind;
  switch (kind.case) {
    case "selectExpr":
      return 1 + estimateCost(kind.value.operand, ctx);
    case "callExpr": {
      const { target, args } = kind.value;
      const operands = 1 + estimateCost(target, ctx) + args.reduce((sum, arg) => sum + estimateCost(arg, ctx), 0);
      const call = matchesCall(expr);
      if (!call) return operands;
      const pattern = literalString(call.pattern);
      const size = pattern === undefined ? ctx.maxStringChars : regexProgramSize(pattern);
      return operands + regexMatchCost(size, call.input ? stringBound(call.input, ctx) : ctx.maxStringChars);
    }
    case "listExpr":
      return 1 + kind.value.elements.reduce((sum, e) => sum + estimateCost(e, ctx), 0);
    case "structExpr":
      return 1 + kind.value.entries.reduce((sum, e) => sum + (e.keyKind.case === "mapKey" ? estimateCost(e.keyKind.value, ctx) : 0) + estimateCost(e.value, ctx), 0);
    case "comprehensionExpr": {
      const c = kind.value;
      const inner = { ...ctx, stringBounds: new Map(ctx.stringBounds).set(c.iterVar, elementStringBound(c.iterRange, ctx)) };
      const perIteration = estimateCost(c.loopCondition, inner) + estimateCost(c.loopStep, inner);
      return 1 + estimateCost(c.iterRange, ctx) + estimateCost(c.accuInit, ctx) + rangeSize(c.iterRange, ctx) * perIteration + estimateCost(c.result, ctx);
    }
    default:
      return 1;
  }
}

/** How many elements iterating over `expr` can visit, at most. */
function rangeSize(expr: CelExpr | undefined, ctx: EstimateContext): number {
  if (!expr) return 0;
  const kind = expr.exprKind;
  switch (kind.case) {
    case "listExpr":
      return kind.value.elements.length;
    case "structExpr":
      return kind.value.entries.length;
    case "identExpr":
      return kind.value.name === "hop" ? ctx.hopFieldCount : UNKNOWN_RANGE;
    case "comprehensionExpr":
      // map / filter yield at most one element per element of their range.
      return rangeSize(kind.value.iterRange, ctx);
    case "callExpr": {
      const { function: fn, target, args } = kind.value;
      if (fn === "split" && target) return stringBound(target, ctx) + 1;
      if (fn === "_+_") return args.reduce((sum, arg) => sum + rangeSize(arg, ctx), 0);
      return UNKNOWN_RANGE;
    }
    default:
      return UNKNOWN_RANGE;
  }
}

/** The longest string an element of the range `expr` can be (when it is a string at all). */
function elementStringBound(expr: CelExpr | undefined, ctx: EstimateContext): number {
  const kind = expr?.exprKind;
  if (kind?.case === "listExpr") return kind.value.elements.reduce((max, e) => Math.max(max, stringBound(e, ctx)), 0);
  if (kind?.case === "callExpr" && kind.value.function === "split" && kind.value.target) return stringBound(kind.value.target, ctx);
  if (kind?.case === "identExpr" && kind.value.name === "hop") return HOP_STRING_BOUND; // its keys
  return ctx.maxStringChars;
}

function stringBound(expr: CelExpr, ctx: EstimateContext): number {
  const kind = expr.exprKind;
  if (kind.case === "identExpr") return ctx.stringBounds?.get(kind.value.name) ?? ctx.maxStringChars;
  if (kind.case === "constExpr" && kind.value.constantKind.case === "stringValue") return kind.value.constantKind.value.length;
  if (kind.case === "selectExpr" && kind.value.operand?.exprKind.case === "identExpr" && kind.value.operand.exprKind.value.name === "hop") return HOP_STRING_BOUND;
  if (kind.case === "callExpr" && kind.value.function === "_+_") return kind.value.args.reduce((sum, arg) => sum + stringBound(arg, ctx), 0);
  return ctx.maxStringChars;
}

/** Node count of a subtree: what one iteration of a loop body charges. */
function nodeCount(expr: CelExpr | undefined): number {
  const shape = { nodes: 0, depth: 0, nesting: 0, literal: 0 };
  measure(expr, 1, 0, shape);
  return shape.nodes;
}

export const BUDGET_FUNCTION = "@budget";

/**
 * A copy of `expr` whose every comprehension first charges its body's node count, per iteration, through
 * `@budget(N)`. The original tree is left untouched.
 */
export function instrumentForBudget(expr: CelExpr): CelExpr {
  let nextId = maxId(expr) + 1n;
  const visit = (node: CelExpr | undefined): CelExpr | undefined => {
    if (!node) return node;
    const kind = node.exprKind;
    switch (kind.case) {
      case "selectExpr":
        return { ...node, exprKind: { case: "selectExpr", value: { ...kind.value, operand: visit(kind.value.operand) } } };
      case "callExpr":
        return { ...node, exprKind: { case: "callExpr", value: { ...kind.value, target: visit(kind.value.target), args: kind.value.args.map((a) => visit(a)!) } } };
      case "listExpr":
        return { ...node, exprKind: { case: "listExpr", value: { ...kind.value, elements: kind.value.elements.map((e) => visit(e)!) } } };
      case "structExpr":
        return {
          ...node,
          exprKind: {
            case: "structExpr",
            value: {
              ...kind.value,
              entries: kind.value.entries.map((e) => ({
                ...e,
                keyKind: e.keyKind.case === "mapKey" ? { case: "mapKey" as const, value: visit(e.keyKind.value)! } : e.keyKind,
                value: visit(e.value),
              })),
            },
          },
        };
      case "comprehensionExpr": {
        const c = kind.value;
        const units = BigInt(Math.max(1, nodeCount(c.loopCondition) + nodeCount(c.loopStep)));
        const charge = callNode(nextId++, BUDGET_FUNCTION, [constInt(nextId++, units)]);
        const condition = callNode(nextId++, "_&&_", [charge, visit(c.loopCondition)!]);
        return {
          ...node,
          exprKind: {
            case: "comprehensionExpr",
            value: { ...c, iterRange: visit(c.iterRange), accuInit: visit(c.accuInit), loopCondition: condition, loopStep: visit(c.loopStep), result: visit(c.result) },
          },
        };
      }
      default:
        return node;
    }
  };
  return visit(expr)!;
}

function maxId(expr: CelExpr | undefined): bigint {
  if (!expr) return 0n;
  let max = expr.id;
  const see = (child: CelExpr | undefined) => {
    const m = maxId(child);
    if (m > max) max = m;
  };
  children(expr).forEach(see);
  return max;
}

function callNode(id: bigint, fn: string, args: CelExpr[]): CelExpr {
  return { $typeName: "cel.expr.Expr", id, exprKind: { case: "callExpr", value: { $typeName: "cel.expr.Expr.Call", function: fn, args } } } as unknown as CelExpr;
}

function constInt(id: bigint, value: bigint): CelExpr {
  return {
    $typeName: "cel.expr.Expr",
    id,
    exprKind: { case: "constExpr", value: { $typeName: "cel.expr.Constant", constantKind: { case: "int64Value", value } } },
  } as unknown as CelExpr;
}

/**
 * The per-evaluation budget. Evaluation is synchronous, so one meter per environment is enough: `run` resets it,
 * evaluates, and turns an exhausted budget into an error even when the expression absorbed the failing charge
 * (e.g. `true || …`).
 */
export class CelMeter {
  private remaining = 0;
  private exhausted = false;
  private budget = 0;

  charge(units: number): void {
    if (this.exhausted || units > this.remaining) {
      this.exhausted = true;
      this.remaining = 0;
      throw new Error(`evaluation budget of ${this.budget} steps exhausted`);
    }
    this.remaining -= units;
  }

  run(budget: number, evaluate: () => CelResult): CelResult {
    this.budget = budget;
    this.remaining = budget;
    this.exhausted = false;
    const result = evaluate();
    if (this.exhausted) return celError(`the condition exceeded its evaluation budget of ${budget} steps and was stopped (fail closed)`);
    return result;
  }
}

/** `@budget(N)` and the string extension functions, bound to `meter`; output-growing ones refuse oversized results. */
export function meteredFunctions(meter: CelMeter, maxStringChars: number): CelFunc[] {
  const budget = celFunc(BUDGET_FUNCTION, [CelScalar.INT], CelScalar.BOOL, (units: bigint) => {
    meter.charge(Number(units));
    return true;
  });
  // Standard functions whose work grows with string length; same signatures, so they replace the built-in ones.
  const scanning = (name: string, scan: (text: string, part: string) => boolean) =>
    celMethod(name, CelScalar.STRING, [CelScalar.STRING], CelScalar.BOOL, function (this: string, part: string) {
      meter.charge(1 + Math.ceil(this.length / 64));
      return scan(this, part);
    });
  const concat = celFunc("_+_", [CelScalar.STRING, CelScalar.STRING], CelScalar.STRING, (left: string, right: string) => {
    if (left.length + right.length > maxStringChars) throw new Error(`+: the result would exceed ${maxStringChars} characters`);
    meter.charge(1 + Math.ceil((left.length + right.length) / 64));
    return left + right;
  });
  // Charged before the pattern is compiled (a stored-earlier pattern may be huge); compiled once per pattern.
  const regexes = new RegexCache();
  const matches = celMethod("matches", CelScalar.STRING, [CelScalar.STRING], CelScalar.BOOL, function (this: string, pattern: string) {
    meter.charge(regexMatchCost(regexes.size(pattern), this.length));
    return regexes.compiled(pattern).test(this);
  });
  return [
    budget,
    concat,
    matches,
    scanning("contains", (text, part) => text.includes(part)),
    scanning("startsWith", (text, part) => text.startsWith(part)),
    scanning("endsWith", (text, part) => text.endsWith(part)),
    ...strings.map((f) => meterStringFunction(f, meter, maxStringChars)),
  ];
}

function meterStringFunction(f: CelFunc, meter: CelMeter, maxStringChars: number): CelFunc {
  const check = (size: number) => {
    if (size > maxStringChars) throw new Error(`${f.name}: the result would exceed ${maxStringChars} characters`);
    meter.charge(1 + Math.ceil(size / 64));
  };
  const impl = function (this: unknown, ...args: unknown[]): unknown {
    // Bound the output before computing it, where it can grow: replace (by the replacement) and join (by the list).
    if (f.name === "replace" && typeof this === "string" && typeof args[1] === "string") check((this.length + 1) * (args[1].length + 1));
    if (f.name === "join" && this && typeof (this as Iterable<unknown>)[Symbol.iterator] === "function") {
      let total = 0;
      for (const item of this as Iterable<unknown>) total += typeof item === "string" ? item.length + (typeof args[0] === "string" ? args[0].length : 0) : 0;
      check(total);
    }
    const result = f.call(0, this as never, args as never);
    if (result === undefined) throw new Error(`${f.name}: no overload matches`);
    if (isCelError(result)) throw new Error(result.message);
    if (typeof result === "string") check(result.length);
    return result;
  };
  if (f.target) return celMethod(f.name, f.target as never, f.arguments as never, f.result as never, impl as never);
  return celFunc(f.name, f.arguments as never, f.result as never, impl as never);
}

