/**
 * Baseline (d): BullMQ with a no-op processor at concurrency 50 on the same Redis — the figure a team would get
 * from an off-the-shelf job queue with no governance. Jobs are added first (addBulk in chunks), then the clock
 * runs from worker start until the last job completes. BullMQ's defaults are kept (completed jobs stay in the
 * completed set, as they do unless a user opts out).
 */
import { randomBytes } from "node:crypto";
import { Queue, Worker } from "bullmq";
import { ErrorCode, SwitchyardError } from "../src/errors.js";
import { perSecond, startStopwatch, summarize, type Measurement, type Scenario, type ScenarioContext } from "./support.js";

const CONCURRENCY = 50;
const ADD_CHUNK = 1_000;
const PAYLOAD_BYTES = 200;

// The figure is the median of `runs` measured rounds: one ~1 s round on a shared 2-core box varies by ±20%.
const SIZES = {
  full: { warmup: 2_000, jobs: 20_000, runs: 3 },
  quick: { warmup: 500, jobs: 3_000, runs: 1 },
};

interface RoundResult {
  completed: number;
  runMs: number;
}

/** Resolves once `target` jobs completed; rejects on the first failed job or when `signal` aborts. */
function completionOf(worker: Worker, target: number, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    let completed = 0;
    const onAbort = (): void => resolve(completed);
    signal.addEventListener("abort", onAbort, { once: true });
    worker.on("completed", () => {
      if (++completed === target) {
        signal.removeEventListener("abort", onAbort);
        resolve(completed);
      }
    });
    worker.on("failed", (job, error) => reject(new SwitchyardError(ErrorCode.Internal, `bullmq job ${job?.id} failed: ${error.message}`, { cause: error })));
    worker.on("error", (error) => reject(new SwitchyardError(ErrorCode.Unavailable, `bullmq worker error: ${error.message}`, { cause: error })));
  });
}

async function round(ctx: ScenarioContext, label: string, count: number): Promise<RoundResult> {
  // maxRetriesPerRequest null is what BullMQ requires for its blocking connection.
  const connection = { url: ctx.redisUrl, maxRetriesPerRequest: null };
  const prefix = `${ctx.keyPrefix}bull`;
  const queueName = `${label.replace(/[^a-z0-9]+/gi, "-")}-${randomBytes(3).toString("hex")}`;
  const queue = new Queue(queueName, { connection, prefix });
  let worker: Worker | undefined;
  let closed = false;
  const closeAll = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await worker?.close(true).catch(() => {});
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close().catch(() => {});
  };
  ctx.defer(closeAll);
  try {
    await queue.waitUntilReady();
    const data = { payload: randomBytes(PAYLOAD_BYTES * 0.75).toString("base64") };
    await ctx.phase(`${label}: addBulk ${count.toLocaleString("en-US")} jobs`, async () => {
      for (let added = 0; added < count; added += ADD_CHUNK) {
        const size = Math.min(ADD_CHUNK, count - added);
        await queue.addBulk(Array.from({ length: size }, (_, i) => ({ name: "noop", data: { ...data, i: added + i } })));
      }
    });
    worker = new Worker(queueName, async () => {}, { connection, prefix, concurrency: CONCURRENCY, autorun: false });
    await worker.waitUntilReady();
    const done = completionOf(worker, count, ctx.signal);
    const watch = startStopwatch();
    const completed = await ctx.phase(`${label}: process`, async () => {
      void worker!.run().catch(() => {});
      return done;
    });
    const runMs = watch.elapsedMs();
    await ctx.phase(`${label}: close + obliterate`, closeAll);
    return { completed, runMs };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

export const bullmqScenario: Scenario = {
  name: "bullmq",
  description: `baseline (d): BullMQ no-op processor, concurrency ${CONCURRENCY}`,
  budgetMs: { full: 60_000, quick: 20_000 },
  async run(ctx): Promise<Measurement[]> {
    const size = ctx.quick ? SIZES.quick : SIZES.full;
    await round(ctx, "warm-up", size.warmup);
    const rates: number[] = [];
    for (let run = 1; run <= size.runs && !ctx.signal.aborted; run++) {
      const { completed, runMs } = await round(ctx, `run ${run}/${size.runs}`, size.jobs);
      if (completed > 0) rates.push(perSecond(completed, runMs));
    }
    return [
      {
        name: "bullmq_jobs_per_s",
        value: summarize(rates).p50,
        unit: "jobs/s",
        extra: { jobs_per_run: size.jobs, runs: rates.map(Math.round), concurrency: CONCURRENCY, payload_bytes: PAYLOAD_BYTES, partial: ctx.signal.aborted },
      },
    ];
  },
};
