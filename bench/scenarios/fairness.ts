/**
 * Scenario `fairness` (issue 15): the noisy neighbour. One coordinator, one harness of concurrency 10 with a 20 ms
 * handler on `role:echo`. Four rounds, each on the three-step workflow:
 *   0. tenant alpha starts its burst, no limits set (first in, first out) → alpha's drain time without fairness;
 *   then the role's capacity is set to 30 (3 × the harness's concurrency: README, Tenant fairness):
 *   1. tenant beta starts 10 tasks on an idle system           → beta's p99 task latency (idle);
 *   2. tenant alpha starts its burst alone                      → alpha's drain time (alone);
 *   3. alpha starts the burst again, then beta its 10 tasks     → beta's p99 (burst) and alpha's drain time.
 * Reports `fair_beta_p99_ratio` (burst ÷ idle; the issue asks ≤ 2), `fair_alpha_drain_overhead_pct` (round 3 vs
 * round 2; the issue asks ≤ 10) and `fair_limits_drain_cost_pct` (round 2 vs round 0: what holding and releasing
 * cost a tenant draining alone). Task latency: from the start call to the task's `finished_at`.
 */
import { setLimit } from "../../src/fairness/limit-changes.js";
import { createPostgresLimitStore } from "../../src/store/limits/postgres-limit-store.js";
import { summarize, type Measurement, type Scenario } from "../support.js";
import { createBenchSystem, pollUntil, type BenchSystem } from "./system.js";

const HANDLER_MS = 20;
const CONCURRENCY = 10;
const CAPACITY = 30;
const BETA_TASKS = 10;

export const fairnessScenario: Scenario = {
  name: "fairness",
  description: "tenant fairness: a burst of one tenant vs 10 tasks of another (issue 15)",
  budgetMs: { full: 240_000, quick: 60_000 },
  async run(ctx): Promise<Measurement[]> {
    const burst = ctx.quick ? 300 : 3_000;
    const system = await ctx.phase("set up scratch database + runtime", () => createBenchSystem(ctx, { limits: true }));
    system.startCoordinator();
    await system.startHarness({
      concurrency: CONCURRENCY,
      handler: async () => {
        await new Promise((r) => setTimeout(r, HANDLER_MS));
        return { ok: true };
      },
    });
    const fifo = await ctx.phase(`round 0: alpha ${burst} tasks alone, no limits (first in, first out)`, () => runTenants(system, ctx.signal, [{ org: "alpha", count: burst }]));
    await setLimit(createPostgresLimitStore(), system.runtime.pool, { orgId: "", destination: "role:echo", maxInFlight: CAPACITY, ratePerSec: null, burst: null, weight: null }, { actor: "bench", reason: "fairness scenario" });
    await system.runtime.limits.refresh();

    const idle = await ctx.phase(`round 1: beta ${BETA_TASKS} tasks, idle`, () => runTenants(system, ctx.signal, [{ org: "beta", count: BETA_TASKS }]));
    const alone = await ctx.phase(`round 2: alpha ${burst} tasks alone`, () => runTenants(system, ctx.signal, [{ org: "alpha", count: burst }]));
    const contended = await ctx.phase(`round 3: alpha ${burst} tasks, then beta ${BETA_TASKS}`, () =>
      runTenants(system, ctx.signal, [
        { org: "alpha", count: burst },
        { org: "beta", count: BETA_TASKS },
      ]),
    );
    const betaIdle = summarize(idle.get("beta")!.latencies).p99;
    const betaBurst = summarize(contended.get("beta")!.latencies).p99;
    const aloneDrain = alone.get("alpha")!.drainMs;
    const contendedDrain = contended.get("alpha")!.drainMs;
    const fifoDrain = fifo.get("alpha")!.drainMs;
    const extra = {
      burst_tasks: burst,
      beta_p99_idle_ms: Math.round(betaIdle),
      beta_p99_burst_ms: Math.round(betaBurst),
      alpha_drain_fifo_ms: Math.round(fifoDrain),
      alpha_drain_alone_ms: Math.round(aloneDrain),
      alpha_drain_with_beta_ms: Math.round(contendedDrain),
      capacity: CAPACITY,
      harness_concurrency: CONCURRENCY,
      handler_ms: HANDLER_MS,
      partial: ctx.signal.aborted,
    };
    return [
      { name: "fair_beta_p99_ratio", value: betaBurst / betaIdle, unit: "x", extra },
      { name: "fair_alpha_drain_overhead_pct", value: ((contendedDrain - aloneDrain) / aloneDrain) * 100, unit: "%" },
      { name: "fair_limits_drain_cost_pct", value: ((aloneDrain - fifoDrain) / fifoDrain) * 100, unit: "%" },
    ];
  },
};

/** Starts each tenant's tasks in order (as fast as it can) and waits for them all; latencies and drain per tenant. */
async function runTenants(system: BenchSystem, signal: AbortSignal, plan: ReadonlyArray<{ org: string; count: number }>): Promise<Map<string, { latencies: number[]; drainMs: number }>> {
  const created = new Map<string, string[]>();
  for (const { org, count } of plan) created.set(org, await system.createTasks(count, [org]));
  const startedAt = new Map<string, number>();
  for (const { org } of plan) {
    startedAt.set(org, Date.now());
    await system.startTasks(created.get(org)!);
  }
  const all = [...created.values()].flat();
  await pollUntil(async () => {
    const { rows } = await system.runtime.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM tasks WHERE id = ANY($1::uuid[]) AND finished_at IS NOT NULL", [all]);
    return rows[0]!.n === all.length;
  }, signal, 50);
  const out = new Map<string, { latencies: number[]; drainMs: number }>();
  for (const [org, ids] of created) {
    const { rows } = await system.runtime.pool.query<{ at: string }>("SELECT (extract(epoch FROM finished_at) * 1000)::bigint AS at FROM tasks WHERE id = ANY($1::uuid[]) AND finished_at IS NOT NULL", [ids]);
    const finished = rows.map((r) => Number(r.at));
    const start = startedAt.get(org)!;
    out.set(org, { latencies: finished.map((at) => at - start), drainMs: Math.max(...finished) - start });
  }
  return out;
}
