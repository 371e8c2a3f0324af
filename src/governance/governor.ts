/**
 * The governor: one pure decision per hop. No clock, randomness or I/O — the same policy and hop facts always
 * give the same verdict, so the coordinator's decisions replay deterministically.
 *
 * Order of evaluation:
 * 1. `builtin:invalid-hop` — hop facts that cannot be judged (NaN or negative cost, …) are denied.
 * 2. `builtin:clearance` — the destination's ceiling from the policy's `clearance` map; a hop whose clearance
 *    floor exceeds it is denied. The most specific matching pattern decides: the one with the most literal
 *    (non-`*`) characters, then the fewest wildcards, then the lowest ceiling — so the result never depends on
 *    key order (which jsonb does not keep).
 * 3. `builtin:egress-disabled` — an `a2a_egress` hop while A2A egress is switched off for the tenant is denied.
 * 4. `builtin:budget` — when the task has a budget and `taskCost + cost` exceeds it (beyond a 1e-9 relative
 *    tolerance, so 0.1 + 0.2 fits a budget of 0.3), the policy's `over_budget` verdict (deny by default);
 *    `builtin:daily-budget` likewise for the tenant's daily budget (hops that cost nothing always pass it).
 * 5. the policy's rules, first match wins; a rule matches when its action, destination and `when` all match.
 *    A condition that errors at run time (or yields a non-boolean) denies with that rule's id and a reason
 *    starting `condition error:` — fail closed.
 * 6. the policy's `default` verdict, rule `builtin:default`.
 */
import { isCelError, type CelResult } from "@bufbuild/cel";
import { formatDestination, type HopFacts, type Verdict } from "../domain.js";
import type { ClearanceCeiling, CompiledPolicy, HopCelValue } from "./policy.js";

export function evaluate(policy: CompiledPolicy, hop: HopFacts): Verdict {
  const unusable = unusableFact(hop);
  if (unusable) return { verdict: "deny", rule: "builtin:invalid-hop", reason: `hop facts cannot be judged: ${unusable}` };

  const destination = formatDestination(hop.destination);
  const ceiling = clearanceCeiling(policy.clearance, destination);
  if (ceiling && hop.clearance > ceiling.ceiling) {
    return {
      verdict: "deny",
      rule: "builtin:clearance",
      reason: `clearance floor ${hop.clearance} exceeds the ceiling ${ceiling.ceiling} of ${destination} (clearance "${ceiling.pattern}")`,
    };
  }

  if (hop.action === "a2a_egress" && !hop.egressEnabled) {
    return { verdict: "deny", rule: "builtin:egress-disabled", reason: "A2A egress is switched off for this tenant (A2A_EGRESS_ENABLED)" };
  }

  if (hop.taskBudget !== null && exceedsBudget(hop.taskCost + hop.cost, hop.taskBudget)) {
    return {
      verdict: policy.overBudget,
      rule: "builtin:budget",
      reason: `task cost ${show(hop.taskCost)} + hop cost ${show(hop.cost)} exceeds the task budget ${show(hop.taskBudget)}`,
    };
  }

  if (hop.tenantDailyBudget !== null && hop.cost > 0 && exceedsBudget(hop.tenantDailyCost + hop.cost, hop.tenantDailyBudget)) {
    return {
      verdict: policy.overBudget,
      rule: "builtin:daily-budget",
      reason: `tenant cost today ${show(hop.tenantDailyCost)} + hop cost ${show(hop.cost)} exceeds the daily budget ${show(hop.tenantDailyBudget)}`,
    };
  }

  let bindings: HopCelValue | undefined;
  for (const rule of policy.rules) {
    if (rule.actions && !rule.actions.has(hop.action)) continue;
    if (rule.destinations && !rule.destinations.some((glob) => glob.matches(destination))) continue;
    if (rule.when) {
      bindings ??= hopCelValue(hop);
      let result: CelResult | Error;
      try {
        result = rule.when.evaluate(bindings);
      } catch (error) {
        result = error instanceof Error ? error : new Error(String(error));
      }
      if (isCelError(result) || result instanceof Error) {
        return { verdict: "deny", rule: rule.id, reason: `condition error: ${result.message}` };
      }
      if (typeof result !== "boolean") {
        return { verdict: "deny", rule: rule.id, reason: `condition error: the condition yielded ${typeof result}, not a boolean` };
      }
      if (!result) continue;
    }
    return { verdict: rule.verdict, rule: rule.id, reason: rule.reason };
  }

  return { verdict: policy.defaultVerdict, rule: "builtin:default", reason: `no rule matched; the policy default is ${policy.defaultVerdict}` };
}

/** The `hop` variable CEL conditions see. */
export function hopCelValue(hop: HopFacts): HopCelValue {
  return {
    action: hop.action,
    org_id: hop.orgId,
    task_id: hop.taskId,
    step_id: hop.stepId,
    workflow: hop.workflow,
    destination: formatDestination(hop.destination),
    destination_kind: hop.destination.kind,
    destination_id: hop.destination.id,
    clearance: BigInt(Math.trunc(hop.clearance)),
    cost: hop.cost,
    task_cost: hop.taskCost,
    task_budget: hop.taskBudget,
    approval_hint: hop.approvalHint,
    delegation_depth: BigInt(Math.trunc(hop.delegationDepth)),
    tenant_daily_cost: hop.tenantDailyCost,
    tenant_daily_budget: hop.tenantDailyBudget,
    egress_enabled: hop.egressEnabled,
  };
}

/** The ceiling that applies to `destination`, or undefined when no pattern matches. */
export function clearanceCeiling(ceilings: readonly ClearanceCeiling[], destination: string): ClearanceCeiling | undefined {
  let best: ClearanceCeiling | undefined;
  for (const candidate of ceilings) {
    if (!candidate.matches(destination)) continue;
    if (!best || moreSpecific(candidate, best)) best = candidate;
  }
  return best;
}

function moreSpecific(a: ClearanceCeiling, b: ClearanceCeiling): boolean {
  if (a.literalChars !== b.literalChars) return a.literalChars > b.literalChars;
  const wildcards = (p: string) => p.split("*").length - 1;
  if (wildcards(a.pattern) !== wildcards(b.pattern)) return wildcards(a.pattern) < wildcards(b.pattern);
  if (a.ceiling !== b.ceiling) return a.ceiling < b.ceiling;
  return a.pattern < b.pattern;
}

function exceedsBudget(total: number, budget: number): boolean {
  return total > budget + 1e-9 * Math.max(1, Math.abs(budget));
}

function unusableFact(hop: HopFacts): string | undefined {
  const numbers: [string, number][] = [
    ["cost", hop.cost],
    ["taskCost", hop.taskCost],
    ["clearance", hop.clearance],
    ["delegationDepth", hop.delegationDepth],
    ["tenantDailyCost", hop.tenantDailyCost],
  ];
  if (hop.taskBudget !== null) numbers.push(["taskBudget", hop.taskBudget]);
  if (hop.tenantDailyBudget !== null) numbers.push(["tenantDailyBudget", hop.tenantDailyBudget]);
  for (const [name, value] of numbers) {
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) return `${name} is ${String(value)}`;
  }
  return undefined;
}

/** Costs in reasons without binary-float noise (0.30000000000000004 → 0.3). */
function show(value: number): string {
  return String(Number(value.toPrecision(12)));
}
