/**
 * A harness in its own process, for scenario (a) on a multi-core box: a Node process is single-threaded, so a
 * coordinator and a harness in one process share one core while the second sits with Postgres and Redis.
 * Forked by `startHarnessProcess` (child-process.ts carries the IPC); everything it needs arrives as one JSON
 * argument, so it reads no environment.
 */
import { BusAuth } from "../../src/bus/auth/bus-auth.js";
import { BENCH_BUS_SECRETS } from "../support.js";
import { Redis } from "ioredis";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { createHarness, type HarnessStats } from "../../src/harness/index.js";
import { forkChild, runAsChild } from "./child-process.js";
import { noopHandler } from "./noop-handler.js";

export interface HarnessChildOptions {
  redisUrl: string;
  keyPrefix: string;
  role: string;
  concurrency: number;
  maxPayloadBytes: number;
  maxDeliveries: number;
  reclaimIdleMs: number;
  heartbeatMs: number;
  blockMs: number;
}

export interface HarnessProcess {
  pid: number;
  /** CPU the child has used so far (ms, all threads). */
  cpuMs(): Promise<number>;
  /** Stops the harness gracefully; resolves with the child's CPU and the harness's counters. */
  stop(): Promise<{ cpuMs: number; stats: HarnessStats }>;
}

/** Forks a harness process and resolves once it reads its stream. */
export async function startHarnessProcess(options: HarnessChildOptions): Promise<HarnessProcess> {
  const child = await forkChild<object, { stats: HarnessStats }>(import.meta.url, options);
  return {
    pid: child.pid,
    cpuMs: async () => (await child.sample()).cpuMs,
    stop: () => child.stop(),
  };
}

runAsChild<HarnessChildOptions, object, { stats: HarnessStats }>(import.meta.url, "harness", {
  async start(options) {
    const redis = new Redis(options.redisUrl, { lazyConnect: true });
    await redis.connect();
    const bus = createRedisBus({ redis, keyPrefix: options.keyPrefix, maxPayloadBytes: options.maxPayloadBytes, maxDeliveries: options.maxDeliveries, ownsConnection: true });
    const harness = createHarness({
      bus,
      role: options.role,
      handler: noopHandler,
      signer: new BusAuth({ secrets: BENCH_BUS_SECRETS, maxPayloadBytes: options.maxPayloadBytes }).signer(`role:${options.role}`),
      concurrency: options.concurrency,
      maxPayloadBytes: options.maxPayloadBytes,
      reclaimIdleMs: options.reclaimIdleMs,
      heartbeatMs: options.heartbeatMs,
      shutdownGraceMs: 2_000,
      blockMs: options.blockMs,
    });
    const running = harness.start();
    return {
      async stop() {
        await harness.close();
        await running;
        await bus.close();
        return { stats: harness.stats };
      },
    };
  },
});
