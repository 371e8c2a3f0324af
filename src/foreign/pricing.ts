/**
 * What a foreign hop costs (issue 10 §3). Two inputs decide it:
 *
 * - usage the agent REPORTS with the task — A2A `metadata` (the Task's, or its status message's), MCP result `_meta`.
 *   `usageFrom` reads it. It is untrusted like everything the agent sends: only finite numbers ≥ 0 and under a cap
 *   are taken, field by field; anything else (a string, a negative, NaN, a huge figure) is ignored, never an error —
 *   a broken meter must not fail a step that did its work;
 * - the registry: the per-call `cost_estimate` and `cost_per_second`, with the hop's elapsed time (send start to
 *   resolution).
 *
 * `priceHop`: a reported `cost` is the price (`reported_usage`); otherwise estimate + elapsed seconds × rate
 * (`estimate_plus_elapsed`). Token counts without a cost are recorded (the bridge's `usage`) but do not price the
 * hop: the registry has no per-token price, and guessing one would be worse than the operator's own estimate.
 */
import type { ForeignUsage } from "./bridge-transition.js";

export type PricedBy = "reported_usage" | "estimate_plus_elapsed";

/** Largest reported cost taken (cost units); larger reports are ignored as implausible, not clamped. */
export const MAX_REPORTED_COST = 1_000_000;
/** Largest token count taken. */
export const MAX_REPORTED_TOKENS = 1_000_000_000_000;

/** Keys under which agents put a usage object in metadata (ours, OpenAI/LangChain-style, snake_case). */
const USAGE_KEYS = ["usage", "usage_metadata", "usageMetadata", "token_usage", "tokenUsage"] as const;
const COST_KEYS = ["cost", "total_cost", "totalCost"] as const;
const INPUT_KEYS = ["inputTokens", "input_tokens", "prompt_tokens", "promptTokens", "promptTokenCount"] as const;
const OUTPUT_KEYS = ["outputTokens", "output_tokens", "completion_tokens", "completionTokens", "candidatesTokenCount"] as const;

/**
 * The usage in one metadata object (`{ usage: {...} }` and the aliases above), or undefined when it reports none
 * that is usable. Accepts any value: metadata is whatever the agent sent.
 */
export function usageFrom(metadata: unknown): ForeignUsage | undefined {
  if (!isObject(metadata)) return undefined;
  for (const key of USAGE_KEYS) {
    const usage = readUsage(metadata[key]);
    if (usage) return usage;
  }
  return undefined;
}

/** The first of several metadata objects that reports usage (e.g. the Task's, then its status message's). */
export function firstUsage(...metadata: unknown[]): ForeignUsage | undefined {
  for (const m of metadata) {
    const usage = usageFrom(m);
    if (usage) return usage;
  }
  return undefined;
}

function readUsage(value: unknown): ForeignUsage | undefined {
  if (!isObject(value)) return undefined;
  const cost = pick(value, COST_KEYS, MAX_REPORTED_COST, false);
  const inputTokens = pick(value, INPUT_KEYS, MAX_REPORTED_TOKENS, true);
  const outputTokens = pick(value, OUTPUT_KEYS, MAX_REPORTED_TOKENS, true);
  if (cost === undefined && inputTokens === undefined && outputTokens === undefined) return undefined;
  return {
    ...(cost !== undefined ? { cost } : {}),
    ...(inputTokens !== undefined ? { inputTokens } : {}),
    ...(outputTokens !== undefined ? { outputTokens } : {}),
  };
}

/** The first alias holding a usable number; a bad value under one alias does not hide a good one under another. */
function pick(obj: Record<string, unknown>, keys: readonly string[], max: number, integer: boolean): number | undefined {
  for (const key of keys) {
    if (!Object.hasOwn(obj, key)) continue;
    const v = obj[key];
    if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || v > max) continue;
    if (integer && !Number.isInteger(v)) continue;
    return v;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export interface HopRates {
  /** The registry's per-call estimate (0 when the agent was deleted meanwhile). */
  costEstimate: number;
  /** Cost units per second of elapsed time (0: elapsed time is free). */
  costPerSecond: number;
}

export interface HopPrice {
  cost: number;
  pricedBy: PricedBy;
}

/** The price of a resolved hop; see the module comment. `elapsedMs` below 0 (clock skew) counts as 0. */
export function priceHop(rates: HopRates, usage: ForeignUsage | undefined, elapsedMs: number): HopPrice {
  if (usage?.cost !== undefined) return { cost: usage.cost, pricedBy: "reported_usage" };
  const seconds = Number.isFinite(elapsedMs) ? Math.max(0, elapsedMs) / 1000 : 0;
  const estimate = safe(rates.costEstimate);
  const rate = safe(rates.costPerSecond);
  return { cost: estimate + seconds * rate, pricedBy: "estimate_plus_elapsed" };
}

function safe(n: number): number {
  return Number.isFinite(n) && n > 0 ? n : 0;
}
