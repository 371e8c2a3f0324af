/**
 * Scenario (a): end-to-end workflow steps per second. A coordinator runs in this process and a harness (no-op
 * handler) in a child process, on the same Redis and Postgres. Each round creates N three-step tasks in bulk (untimed set-up), then
 * starts them all as the gateway does (one signed `task_started` envelope per task, published to the tenant's shard
 * inbox; the coordinator applies them in its own batches, between RESULTs) and waits until every task is completed. Each step is a dispatch hop (governed, audited, outbox → role:echo), a no-op handler
 * turn in the harness, and a result hop (RESULT → coordinator → step completed, next step dispatched).
 *
 * The clock runs from the start of the first dispatching transaction to the commit of the last step's RESULT;
 * `steps_per_s` = completed steps / that time. The audit log stays durable (default `synchronous_commit`).
 */
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { perSecond, summarize, type Measurement, type Scenario, type ScenarioContext } from "../support.js";
import { cpuPerUnit, sampleCpu } from "./probe.js";
import { StepTracker } from "./step-tracker.js";
import { auditBreakdown, createBenchSystem, pollUntil, taskOutcome, type BenchSystem } from "./system.js";

const SIZES = {
  full: { warmup: 1_000, tasks: 6_000, runs: 3 },
  quick: { warmup: 300, tasks: 1_500, runs: 1 },
};
/** Turns the harness runs at once (BullMQ's baseline runs 50). */
const HARNESS_CONCURRENCY = 100;
const COORDINATORS = 1;
/**
 * The harness runs in a child process: one Node thread is this bench's limit, and on 2 cores a coordinator and a
 * harness sharing it measured ~35% slower than two processes (README, "Process layout").
 */
const HARNESS_PROCESS = true;

interface RoundResult {
  steps: number;
  ms: number;
  cpu: Record<string, number | null>;
  profile: Record<string, unknown>;
}

async function round(ctx: ScenarioContext, system: BenchSystem, tracker: StepTracker, label: string, count: number, harnessCpuMs: () => Promise<number>): Promise<RoundResult | undefined> {
  const taskIds = await ctx.phase(`${label}: create ${count.toLocaleString("en-US")} tasks (bulk)`, () => system.createTasks(count));
  const steps = count * system.workflow.definition.steps.length;
  tracker.reset();
  system.engine.profile.reset();
  const cpuBefore = await sampleCpu(system.cpuSources);
  const harnessBefore = await harnessCpuMs();
  const done = await ctx.phase(`${label}: run ${steps.toLocaleString("en-US")} steps`, async () => {
    await system.startTasksThroughOwner(taskIds);
    return pollUntil(() => tracker.completedTasks >= count, ctx.signal, 5);
  });
  const cpuAfter = await sampleCpu(system.cpuSources);
  const harnessMs = (await harnessCpuMs()) - harnessBefore;
  if (!done) return undefined;
  const ms = tracker.lastCompletionAt! - tracker.firstDispatchAt!;
  const outcome = await taskOutcome(system, taskIds);
  // Per task: one dispatch and one result row per step, nothing else (no timeouts, retries or denials).
  if (outcome.completed !== count || outcome.auditRows !== 2 * steps || tracker.completedSteps !== steps) {
    throw new SwitchyardError(
      ErrorCode.Internal,
      `${label}: ${outcome.completed}/${count} tasks completed, ${outcome.auditRows} audit rows (expected ${2 * steps}: ${await auditBreakdown(system, taskIds)}), ${tracker.completedSteps} steps seen`,
    );
  }
  const cpu = cpuPerUnit(cpuBefore, cpuAfter, steps);
  if (HARNESS_PROCESS) cpu.harness_process_us = Math.round((harnessMs * 1000) / steps);
  return { steps, ms, cpu, profile: system.engine.profile.summary() };
}

export const endToEndScenario: Scenario = {
  name: "end-to-end",
  description: `(a) three-step workflows end to end: coordinator + no-op harness (concurrency ${HARNESS_CONCURRENCY}, ${HARNESS_PROCESS ? "own process" : "same process"})`,
  budgetMs: { full: 90_000, quick: 30_000 },
  async run(ctx): Promise<Measurement[]> {
    const size = ctx.quick ? SIZES.quick : SIZES.full;
    const system = await ctx.phase("set up scratch database + runtime", () => createBenchSystem(ctx));
    for (let i = 0; i < COORDINATORS; i++) system.startCoordinator();
    let harnessCpuMs = async (): Promise<number> => 0;
    if (HARNESS_PROCESS) {
      const child = await system.startHarnessProcess({ concurrency: HARNESS_CONCURRENCY });
      harnessCpuMs = () => child.cpuMs();
    } else {
      await system.startHarness({ concurrency: HARNESS_CONCURRENCY });
    }
    const tracker = new StepTracker(system.engine, { recordLatency: false });
    ctx.defer(() => tracker.stop());

    await round(ctx, system, tracker, "warm-up", size.warmup, harnessCpuMs);
    const rounds: RoundResult[] = [];
    for (let run = 1; run <= size.runs && !ctx.signal.aborted; run++) {
      const result = await round(ctx, system, tracker, `run ${run}/${size.runs}`, size.tasks, harnessCpuMs);
      if (!result) break;
      rounds.push(result);
      ctx.log(`run ${run}: ${Math.round(perSecond(result.steps, result.ms))} steps/s (${result.steps} steps in ${Math.round(result.ms)} ms)`);
    }
    if (rounds.length === 0) throw new SwitchyardError(ErrorCode.Timeout, "no measured round finished within the budget");
    const rates = rounds.map((r) => perSecond(r.steps, r.ms));
    const p50 = summarize(rates).p50;
    const median = rounds.find((r) => perSecond(r.steps, r.ms) === p50);
    return [
      {
        name: "steps_per_s",
        value: p50,
        unit: "steps/s",
        extra: {
          tasks_per_run: size.tasks,
          steps_per_task: system.workflow.definition.steps.length,
          runs: rates.map(Math.round),
          hops_per_s: Math.round(p50 * 2),
          harness_concurrency: HARNESS_CONCURRENCY,
          coordinators: COORDINATORS,
          batch: system.config.coordinator.batchSize,
          processes: HARNESS_PROCESS ? "2 (coordinator + driver, harness)" : "1 (coordinator + harness + driver)",
          cpu_per_step: median?.cpu,
          profile: median?.profile,
          partial: ctx.signal.aborted,
        },
      },
    ];
  },
};
