/**
 * Scenario (h): the soak. 500 steps/s offered for 20 minutes (`--soak-minutes N`), open loop: every 200 ms the
 * tasks of the three-step workflow due by then are created and started, however far behind the system is. The
 * coordinator and the no-op harness run in processes of their own; this process is the starter (start envelopes
 * through the shard owner, as the gateway starts tasks). Every few seconds
 * it samples the RSS of the three processes, Redis `used_memory`, the length of every stream the run uses and the
 * rows of `processed_envelopes`.
 *
 * `soak_rss_growth_pct`: per process, the RSS at the end (mean of the last 3 samples) against the RSS just after
 * the warm-up (mean of the first 3 samples after it); the largest growth over the processes. Streams and
 * `processed_envelopes` are bounded when their size at the end is not far above their size at the middle (both
 * in details). Opt-in: only `--only soak` runs it.
 */
import { readFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { streamKey } from "../../src/bus/keys.js";
import { allShards, shardInbox } from "../../src/bus/shards.js";
import type { Measurement, Scenario } from "../support.js";
import { startCoordinatorProcess } from "./coordinator-child.js";
import { createBenchSystem, type BenchSystem } from "./system.js";

const OFFERED_STEPS_PER_S = 500;
const SAMPLE_MS = 5_000;
const RELEASE_MS = 200;
/**
 * Shorter than the defaults (7 days, 100,000 entries) so that both reach their steady state within the warm-up;
 * the trim job runs every 10 s either way. (The env floor for the retention is an hour; the bench sets it directly.)
 */
const DEDUPE_RETENTION_MS = 5 * 60_000;
const TRIM_MAXLEN = 20_000;

interface Sample {
  atS: number;
  rssMb: Record<string, number>;
  redisMb: number;
  streamEntries: number;
  processedEnvelopes: number;
  completedTasks: number;
}

async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8").catch(() => "");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function sample(system: BenchSystem, pids: Record<string, number>, atS: number): Promise<Sample> {
  const { redis, pool } = system.runtime;
  const prefix = system.config.bus.keyPrefix;
  const streams = ["role:echo", COORDINATOR_STREAM, ...allShards(system.config.shards.count).map(shardInbox)];
  const lengths = await Promise.all(streams.map((s) => redis.xlen(streamKey(prefix, s)).catch(() => 0)));
  const info = await redis.info("memory");
  const counts = await pool.query<{ processed: string; completed: string }>(
    "SELECT (SELECT count(*) FROM processed_envelopes) AS processed, (SELECT count(*) FROM tasks WHERE status = 'completed') AS completed",
  );
  const rss: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) rss[name] = Math.round((await rssMb(pid)) * 10) / 10;
  return {
    atS,
    rssMb: rss,
    redisMb: Math.round((Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0) / 1048576) * 10) / 10,
    streamEntries: lengths.reduce((a, b) => a + b, 0),
    processedEnvelopes: Number(counts.rows[0]!.processed),
    completedTasks: Number(counts.rows[0]!.completed),
  };
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const growthPct = (from: number, to: number): number => (from > 0 ? ((to - from) / from) * 100 : 0);

export const soakScenario: Scenario = {
  name: "soak",
  description: `(h) soak: ${OFFERED_STEPS_PER_S} steps/s offered for 20 min (--soak-minutes N); RSS, Redis memory, streams, processed_envelopes`,
  optIn: true,
  budgetMs: (options) => (options.soakMinutes ?? 20) * 60_000 + 180_000,
  async run(ctx): Promise<Measurement[]> {
    const durationMs = (ctx.soakMinutes ?? 20) * 60_000;
    // Half the run, at most 11 min, at least 30 s: JIT, pools and caches fill up first, and so does everything kept
    // for a fixed time or length — the harness's duplicate claims (10 min), applied envelope ids (DEDUPE_RETENTION_MS
    // below) and the streams (TRIM_MAXLEN) — so the second half shows whether anything else keeps growing.
    const warmupS = Math.max(30, Math.min(durationMs / 2, 11 * 60_000) / 1000);
    const system = await ctx.phase("set up scratch database + runtime", () => createBenchSystem(ctx));
    const config = {
      ...system.config,
      bus: { ...system.config.bus, trimMaxLen: TRIM_MAXLEN },
      coordinator: { ...system.config.coordinator, dedupeRetentionMs: DEDUPE_RETENTION_MS },
      flags: { ...system.config.flags, busEnabled: true, coordinatorEnabled: true, coordinatorTenants: "*" as const },
    };
    const coordinator = await ctx.phase("start the coordinator process", () => startCoordinatorProcess(config));
    ctx.defer(() => coordinator.stop().catch(() => {}));
    const harness = await ctx.phase("start the harness process", () => system.startHarnessProcess({ concurrency: 100 }));
    const pids = { coordinator: coordinator.pid, harness: harness.pid, starter: process.pid };
    const tasksPerS = OFFERED_STEPS_PER_S / system.workflow.definition.steps.length;
    const samples: Sample[] = [];
    let released = 0;
    const began = performance.now();
    const elapsedS = () => (performance.now() - began) / 1000;
    await ctx.phase(`soak ${durationMs / 60_000} min`, async () => {
      let nextSample = 0;
      while (!ctx.signal.aborted && elapsedS() * 1000 < durationMs) {
        const due = Math.floor(elapsedS() * tasksPerS) - released;
        if (due > 0) {
          await system.startTasksThroughOwner(await system.createTasks(due));
          released += due;
        }
        if (elapsedS() >= nextSample) {
          samples.push(await sample(system, pids, Math.round(elapsedS())));
          nextSample += SAMPLE_MS / 1000;
          const last = samples.at(-1)!;
          if (samples.length % 12 === 1) ctx.log(`soak ${last.atS} s: rss ${JSON.stringify(last.rssMb)} MB, redis ${last.redisMb} MB, stream entries ${last.streamEntries}, processed_envelopes ${last.processedEnvelopes}, completed ${last.completedTasks}/${released}`);
        }
        await new Promise((r) => setTimeout(r, RELEASE_MS));
      }
    });
    const after = samples.filter((s) => s.atS >= warmupS);
    const head = after.slice(0, 3);
    const tail = after.slice(-3);
    const middle = after[Math.floor(after.length / 2)];
    const last = samples.at(-1);
    const growth = Object.fromEntries(Object.keys(pids).map((name) => [name, Math.round(growthPct(mean(head.map((s) => s.rssMb[name]!)), mean(tail.map((s) => s.rssMb[name]!))) * 10) / 10]));
    const measured = after.length >= 4;
    return [
      {
        name: "soak_rss_growth_pct",
        value: measured ? Math.max(...Object.values(growth)) : Number.NaN,
        unit: "%",
        extra: {
          minutes: durationMs / 60_000,
          warmup_s: warmupS,
          offered_steps_per_s: OFFERED_STEPS_PER_S,
          tasks_released: released,
          tasks_completed: last?.completedTasks,
          rss_growth_pct: growth,
          rss_mb_after_warmup: head[0]?.rssMb,
          rss_mb_end: last?.rssMb,
          redis_memory_growth_pct: measured ? Math.round(growthPct(mean(head.map((s) => s.redisMb)), mean(tail.map((s) => s.redisMb))) * 10) / 10 : null,
          stream_entries: { middle: middle?.streamEntries, end: last?.streamEntries },
          processed_envelopes: { middle: middle?.processedEnvelopes, end: last?.processedEnvelopes },
          samples: samples.length,
        },
      },
    ];
  },
};
