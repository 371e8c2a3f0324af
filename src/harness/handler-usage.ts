/**
 * `ctx.usage()`: what a handler reports it spent in one turn, summed over its calls. Shared by the harness turn
 * and the testing kit's fake context, so a report the harness refuses is refused in a unit test too.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { UsageReport } from "./types.js";

export interface UsageTotals {
  cost: number;
  inputTokens: number;
  outputTokens: number;
}

function nonNegative(value: number | undefined, name: string, integer: boolean): number {
  if (value === undefined) return 0;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `usage.${name} must be a ${integer ? "non-negative integer" : "non-negative number"}, got ${String(value)}`, {
      details: { path: `usage.${name}` },
    });
  }
  return value;
}

/** Adds `report` to `totals`; throws INVALID_ARGUMENT (and adds nothing) when any field is bad. */
export function addUsage(totals: UsageTotals, report: UsageReport): void {
  // Validate everything before adding anything, so a bad report leaves the totals untouched.
  const cost = nonNegative(report.cost, "cost", false);
  const inputTokens = nonNegative(report.inputTokens, "inputTokens", true);
  const outputTokens = nonNegative(report.outputTokens, "outputTokens", true);
  totals.cost += cost;
  totals.inputTokens += inputTokens;
  totals.outputTokens += outputTokens;
}
