/**
 * Scenario (e): step latency at a fixed offered load of 1,000 steps/s. An open-loop pacer releases tasks of the
 * three-step workflow at 333⅓ tasks/s — each brings three steps, so 1,000 steps/s are offered whatever the system
 * does; a slow system builds a queue and its latency shows it (no coordinated omission). Tasks are created in
 * bulk beforehand (untimed); a released task is started as the gateway starts it (issue 11 §2): a starter loop
 * writes one signed `task_started` envelope per task released since its last round to the outbox and publishes
 * them to the tenant's shard inbox, and the coordinator applies them in its own batches (the dispatch hop and its
 * audit row are written on the owner's chain). The coordinator runs in this process and a no-op harness in a
 * child process, as in (a).
 *
 * Why not the engine inline: a second writer on the tenant's chain makes the coordinator's cached head stale, and
 * each stale head costs a batch applied twice, then the locking way for a while (README, "Audit heads in memory").
 *
 * Step latency, per step: from its dispatch to the commit of its accepted RESULT —
 * - dispatch of the first step = the moment the pacer released the task (before it waits for the starter);
 * - dispatch of a later step = the start of the coordinator transaction that completed the previous step and
 *   created this step's WORK envelope;
 * - completion = `engine.apply` resolved for the transaction holding the step's `result` / `accepted` audit row.
 * So each step's figure covers: outbox publish → role stream → harness read → no-op handler → RESULT publish →
 * coordinator read → batch transaction → COMMIT. Task latency (pacer's start → last step's commit) is in details.
 */
import { paceAt, perSecond, summarize, type Measurement, type Scenario } from "../support.js";
import { StepTracker } from "./step-tracker.js";
import { createBenchSystem, pollUntil } from "./system.js";

const OFFERED_STEPS_PER_S = 1_000;
const DURATION = {
  full: { warmupMs: 3_000, measureMs: 10_000 },
  quick: { warmupMs: 1_000, measureMs: 4_000 },
};
const HARNESS_CONCURRENCY = 100;
/** How long in-flight tasks may take to finish after the pacer stops before the round counts as partial. */
const DRAIN_MS = 10_000;

export const latencyScenario: Scenario = {
  name: "latency",
  description: `(e) step latency at ${OFFERED_STEPS_PER_S.toLocaleString("en-US")} steps/s offered (open loop)`,
  budgetMs: { full: 60_000, quick: 30_000 },
  async run(ctx): Promise<Measurement[]> {
    const duration = ctx.quick ? DURATION.quick : DURATION.full;
    const system = await ctx.phase("set up scratch database + runtime", () => createBenchSystem(ctx));
    system.startCoordinator();
    await system.startHarnessProcess({ concurrency: HARNESS_CONCURRENCY });
    const stepsPerTask = system.workflow.definition.steps.length;
    const firstStep = system.workflow.definition.steps[0]!.id;
    const tracker = new StepTracker(system.engine, { recordLatency: true });
    ctx.defer(() => tracker.stop());
    const ratePerS = OFFERED_STEPS_PER_S / stepsPerTask;
    const taskIds = await ctx.phase("create tasks (bulk)", () =>
      system.createTasks(Math.ceil((ratePerS * (duration.warmupMs + duration.measureMs)) / 1000) + 100),
    );

    // The starter: one round of start envelopes for every task released since the previous one.
    const released: string[] = [];
    let wake: (() => void) | undefined;
    let stopping = false;
    let failedStarts = 0;
    const starter = (async () => {
      while (!stopping || released.length > 0) {
        if (released.length === 0) {
          await new Promise<void>((resolve) => (wake = resolve));
          continue;
        }
        const batch = released.splice(0, released.length);
        await system.startTasksThroughOwner(batch).catch(() => (failedStarts += batch.length));
      }
    })();
    ctx.defer(async () => {
      stopping = true;
      wake?.();
      await starter;
    });

    const startedAt = new Map<string, number>();
    let nextTask = 0;
    const offer = async (label: string, durationMs: number): Promise<number> =>
      ctx.phase(label, () =>
        paceAt({ ratePerS, durationMs, signal: ctx.signal }, (_, intendedAtMs) => {
          const taskId = taskIds[nextTask++];
          if (taskId === undefined) return;
          startedAt.set(taskId, intendedAtMs);
          tracker.dispatched(taskId, firstStep, intendedAtMs);
          released.push(taskId);
          wake?.();
          wake = undefined;
        }),
      );

    await offer(`warm-up: ${Math.round(ratePerS)} tasks/s for ${duration.warmupMs / 1000} s`, duration.warmupMs);
    await pollUntil(() => tracker.completedTasks >= startedAt.size, AbortSignal.any([ctx.signal, AbortSignal.timeout(DRAIN_MS)]), 10);
    tracker.reset();
    startedAt.clear();
    failedStarts = 0;
    system.engine.profile.reset();

    const windowStart = performance.now();
    const offered = await offer(`measure: ${Math.round(ratePerS)} tasks/s (${OFFERED_STEPS_PER_S} steps/s) for ${duration.measureMs / 1000} s`, duration.measureMs);
    const windowMs = performance.now() - windowStart;
    const drained = await ctx.phase("drain in-flight tasks", () =>
      pollUntil(() => tracker.completedTasks >= offered - failedStarts, AbortSignal.any([ctx.signal, AbortSignal.timeout(DRAIN_MS)]), 5),
    );
    const drainedAt = performance.now();

    const measured = tracker.latencies.filter((l) => startedAt.has(l.taskId));
    const completedSteps = measured.length;
    // A step that never completed counts with the time since its task was released (the run is then partial):
    // leaving it out would make a stalled system look fast.
    const completedPerTask = new Map<string, number>();
    for (const l of measured) completedPerTask.set(l.taskId, (completedPerTask.get(l.taskId) ?? 0) + 1);
    const unfinishedWaits = failedStarts > 0 ? [] : [...startedAt].flatMap(([taskId, at]) => Array.from({ length: stepsPerTask - (completedPerTask.get(taskId) ?? 0) }, () => drainedAt - at));
    const unfinished = unfinishedWaits.length;
    const steps = summarize([...measured.map((l) => l.ms), ...unfinishedWaits]);
    const taskLatencies = [...startedAt].flatMap(([taskId, at]) => {
      const done = tracker.taskDoneAt.get(taskId);
      return done === undefined ? [] : [done - at];
    });
    const byStep = Object.fromEntries(
      system.workflow.definition.steps.map((def) => {
        const s = summarize(measured.filter((l) => l.stepId === def.id).map((l) => l.ms));
        return [def.id, { p50: round(s.p50), p99: round(s.p99) }];
      }),
    );
    const tasksSummary = summarize(taskLatencies);
    const coordinatorPart = summarize(measured.flatMap((l) => (l.coordinatorMs === undefined ? [] : [l.coordinatorMs])));
    const extra = {
      offered_steps_per_s: OFFERED_STEPS_PER_S,
      offered_tasks: offered,
      completed_steps: completedSteps,
      unfinished_steps: unfinished,
      failed_starts: failedStarts,
      achieved_steps_per_s: Math.round(perSecond(completedSteps, windowMs)),
      step_ms: { p50: round(steps.p50), p90: round(steps.p90), p99: round(steps.p99), max: round(steps.max), mean: round(steps.mean) },
      by_step_ms: byStep,
      // From the RESULT's creation in the harness (its envelope's created_at_ms, a ms wall clock) to the commit:
      // the coordinator's share of each step (queueing behind the batch in flight + its own batch).
      result_to_commit_ms: { p50: round(coordinatorPart.p50), p99: round(coordinatorPart.p99) },
      task_ms: { p50: round(tasksSummary.p50), p99: round(tasksSummary.p99), max: round(tasksSummary.max) },
      harness_concurrency: HARNESS_CONCURRENCY,
      profile: system.engine.profile.summary(),
      partial: ctx.signal.aborted || !drained || failedStarts > 0,
    };
    return [
      { name: "step_p50_ms", value: steps.p50, unit: "ms", extra },
      { name: "step_p99_ms", value: steps.p99, unit: "ms" },
    ];
  },
};

const round = (n: number): number => Math.round(n * 100) / 100;
