/**
 * Scenario (b): the coordinator alone, draining a pre-filled inbox. Set-up (untimed): N tasks of the three-step
 * workflow are created and started through the engine, so each has step `one` dispatched (attempt 1); the WORK
 * envelopes are turned into the RESULT envelopes a harness would send (same builder as the harness) and written
 * to the coordinator's inbox, and the WORK stream is emptied. Timed: a coordinator starts and drains the inbox —
 * each RESULT completes step `one` (audit row `result`) and dispatches step `two` (audit row `dispatch` + outbox
 * WORK, published after commit). The clock stops once every RESULT is acknowledged and every new WORK published.
 *
 * `hops_per_s` counts governed hops as audit rows committed per second (2 per RESULT here); the events and the
 * dispatch hops alone are in `details`.
 */
import { performance } from "node:perf_hooks";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { streamKey } from "../../src/bus/keys.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { perSecond, summarize, type Measurement, type Scenario, type ScenarioContext } from "../support.js";
import { prepareResults } from "./prefill.js";
import { cpuPerUnit, sampleCpu } from "./probe.js";
import { createBenchSystem, pollUntil, taskOutcome, type BenchSystem } from "./system.js";

const SIZES = {
  full: { warmup: 4_000, results: 12_000, runs: 3 },
  quick: { warmup: 1_000, results: 3_000, runs: 1 },
};
/**
 * Coordinators draining the inbox together, in this process. Two overlap one batch's Node work with the other's
 * Postgres round trips, but share one Node thread and queue on the tenant's audit-head lock; see README.
 */
const COORDINATORS = 1;

export interface RoundResult {
  results: number;
  auditRows: number;
  drainMs: number;
  profile: Record<string, unknown>;
  cpu: Record<string, number | null>;
}

export async function round(ctx: ScenarioContext, system: BenchSystem, label: string, count: number): Promise<RoundResult> {
  const taskIds = await ctx.phase(`${label}: create + start ${count.toLocaleString("en-US")} tasks (engine)`, async () => {
    const ids = await system.createTasks(count);
    await system.startTasks(ids);
    return ids;
  });
  const prefilled = await ctx.phase(`${label}: prefill ${count.toLocaleString("en-US")} RESULTs`, async () => {
    const results = await prepareResults(system, () => COORDINATOR_STREAM);
    await results.publish();
    return results.count;
  });
  if (prefilled !== count) throw new SwitchyardError(ErrorCode.Internal, `expected ${count} WORK envelopes to answer, found ${prefilled}`);

  const { redis } = system.runtime;
  const workKey = streamKey(system.config.bus.keyPrefix, "role:echo");
  const baseline = (await system.inboxProgress()).acked;
  system.engine.profile.reset();
  const cpuBefore = await sampleCpu(system.cpuSources);
  const started = performance.now();
  const coordinators = Array.from({ length: COORDINATORS }, () => system.startCoordinator());
  const drained = await ctx.phase(`${label}: drain`, () =>
    pollUntil(async () => {
      const [progress, published] = await Promise.all([system.inboxProgress(), redis.xlen(workKey)]);
      return progress.acked - baseline >= count && published >= count;
    }, ctx.signal),
  );
  const drainMs = performance.now() - started;
  const cpuAfter = await sampleCpu(system.cpuSources);
  const profile = system.engine.profile.summary();
  const auditRows = system.engine.profile.auditRows;
  const results = system.engine.profile.events;
  await Promise.all(coordinators.map((c) => c.close()));
  // The step-two WORK just published would otherwise be answered by the next round's prefill.
  await redis.unlink(workKey);

  if (drained) {
    const outcome = await taskOutcome(system, taskIds);
    // Per task: the set-up dispatch of `one`, then `result` of one and `dispatch` of two.
    if (outcome.auditRows !== 3 * count || outcome.timeouts > 0) {
      throw new SwitchyardError(ErrorCode.Internal, `after the drain the audit log holds ${outcome.auditRows} rows for ${count} tasks (expected ${3 * count}, ${outcome.timeouts} timeouts)`);
    }
  }
  return { results, auditRows, drainMs, profile, cpu: cpuPerUnit(cpuBefore, cpuAfter, auditRows) };
}

/** Per statement, the Postgres CPU a batch spent on it (ms), from a profile taken with `measurePostgres`. */
function postgresByStatement(profile: Record<string, unknown>): Record<string, number> {
  const statements = (profile.statements ?? {}) as Record<string, { postgres_ms_per_batch?: number }>;
  return Object.fromEntries(Object.entries(statements).map(([name, s]) => [name, s.postgres_ms_per_batch ?? 0]));
}

export const governedHopsScenario: Scenario = {
  name: "governed-hops",
  description: "(b) coordinator alone draining a pre-filled inbox of RESULTs (each: result + next dispatch)",
  budgetMs: { full: 90_000, quick: 30_000 },
  async run(ctx): Promise<Measurement[]> {
    const size = ctx.quick ? SIZES.quick : SIZES.full;
    const system = await ctx.phase("set up scratch database + runtime", () => createBenchSystem(ctx));
    // The warm-up also reads each statement's Postgres CPU (/proc/<pid>/schedstat): too costly for timed rounds.
    system.engine.profile.measurePostgres = true;
    const warmup = await round(ctx, system, "warm-up", size.warmup);
    system.engine.profile.measurePostgres = false;
    const rounds: RoundResult[] = [];
    for (let run = 1; run <= size.runs && !ctx.signal.aborted; run++) {
      const result = await round(ctx, system, `run ${run}/${size.runs}`, size.results);
      rounds.push(result);
      ctx.log(`run ${run}: ${Math.round(perSecond(result.auditRows, result.drainMs))} hops/s (${result.auditRows} audit rows in ${Math.round(result.drainMs)} ms)`);
    }
    if (rounds.length === 0) throw new SwitchyardError(ErrorCode.Timeout, "no measured round ran within the budget");
    const rates = rounds.map((r) => perSecond(r.auditRows, r.drainMs));
    const median = rounds.find((r) => perSecond(r.auditRows, r.drainMs) === summarize(rates).p50);
    return [
      {
        name: "hops_per_s",
        value: summarize(rates).p50,
        unit: "hops/s",
        extra: {
          results_per_run: size.results,
          runs: rates.map(Math.round),
          // Each RESULT is one event and two audit rows: its `result` row and the next step's `dispatch` row.
          events_per_s: median ? Math.round(perSecond(median.results, median.drainMs)) : null,
          hops_per_event: 2,
          batch: system.config.coordinator.batchSize,
          coordinators: COORDINATORS,
          cpu_per_hop: median?.cpu,
          profile: median?.profile,
          warmup_postgres_cpu: postgresByStatement(warmup.profile),
          partial: ctx.signal.aborted,
        },
      },
    ];
  },
};
