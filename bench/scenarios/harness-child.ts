/**
 * A harness in its own process, for scenario (a) on a multi-core box: a Node process is single-threaded, so a
 * coordinator and a harness in one process share one core while the second sits with Postgres and Redis.
 * Forked by `startHarnessProcess`; talks to its parent over the IPC channel only:
 *   parent → child: { type: "cpu" } (answered with { type: "cpu", cpuMs }), { type: "stop" }
 *   child → parent: { type: "ready" } once reading, { type: "stopped", cpuMs, stats } after a graceful stop.
 * Everything it needs arrives as one JSON argument, so it reads no environment.
 */
import { fork } from "node:child_process";
import { Redis } from "ioredis";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { createHarness, type HarnessStats } from "../../src/harness/index.js";
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

type ChildMessage = { type: "ready" } | { type: "cpu"; cpuMs: number } | { type: "stopped"; cpuMs: number; stats: HarnessStats };

export interface HarnessProcess {
  pid: number;
  /** CPU the child has used so far (ms, all threads). */
  cpuMs(): Promise<number>;
  /** Stops the harness gracefully; resolves with the child's CPU and the harness's counters. */
  stop(): Promise<{ cpuMs: number; stats: HarnessStats }>;
}

/** Forks a harness process and resolves once it reads its stream. */
export async function startHarnessProcess(options: HarnessChildOptions): Promise<HarnessProcess> {
  // The parent runs under tsx; its execArgv carries the loader, so the child can run this .ts file too.
  const child = fork(new URL(import.meta.url).pathname, [JSON.stringify(options)], { execArgv: process.execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const messages: ChildMessage[] = [];
  const waiters: Array<() => void> = [];
  child.on("message", (message: ChildMessage) => {
    messages.push(message);
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const next = async (type: ChildMessage["type"]): Promise<ChildMessage> => {
    for (;;) {
      const index = messages.findIndex((m) => m.type === type);
      if (index >= 0) return messages.splice(index, 1)[0]!;
      const code = await Promise.race([exited, new Promise<"message">((resolve) => waiters.push(() => resolve("message")))]);
      if (code !== "message") throw new SwitchyardError(ErrorCode.Internal, `harness process exited (${code}) before "${type}"`);
    }
  };
  await next("ready");
  return {
    pid: child.pid!,
    async cpuMs() {
      child.send({ type: "cpu" });
      return ((await next("cpu")) as Extract<ChildMessage, { type: "cpu" }>).cpuMs;
    },
    async stop() {
      child.send({ type: "stop" });
      const stopped = (await next("stopped")) as Extract<ChildMessage, { type: "stopped" }>;
      await exited;
      return { cpuMs: stopped.cpuMs, stats: stopped.stats };
    },
  };
}

async function runChild(options: HarnessChildOptions): Promise<void> {
  const redis = new Redis(options.redisUrl, { lazyConnect: true });
  await redis.connect();
  const bus = createRedisBus({ redis, keyPrefix: options.keyPrefix, maxPayloadBytes: options.maxPayloadBytes, maxDeliveries: options.maxDeliveries, ownsConnection: true });
  const harness = createHarness({
    bus,
    role: options.role,
    handler: noopHandler,
    concurrency: options.concurrency,
    maxPayloadBytes: options.maxPayloadBytes,
    reclaimIdleMs: options.reclaimIdleMs,
    heartbeatMs: options.heartbeatMs,
    shutdownGraceMs: 2_000,
    blockMs: options.blockMs,
  });
  const running = harness.start();
  const cpuMs = (): number => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
  };
  process.send!({ type: "ready" } satisfies ChildMessage);
  await new Promise<void>((resolve) =>
    process.on("message", (m: { type?: string }) => {
      if (m.type === "cpu") process.send!({ type: "cpu", cpuMs: cpuMs() } satisfies ChildMessage);
      if (m.type === "stop") resolve();
    }),
  );
  await harness.close();
  await running;
  await bus.close();
  process.send!({ type: "stopped", cpuMs: cpuMs(), stats: harness.stats } satisfies ChildMessage, () => process.exit(0));
}

// Only as a forked child (an IPC channel and the options argument): importing this module starts nothing.
if (process.send && process.argv[2]?.startsWith("{") && process.argv[1] === new URL(import.meta.url).pathname) {
  runChild(JSON.parse(process.argv[2]) as HarnessChildOptions).catch((error: unknown) => {
    process.stderr.write(`harness process failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  });
}
