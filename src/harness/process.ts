/**
 * A worker process: loads a handler module, connects Redis, runs one harness until a signal. It holds no database
 * credentials (issue 27 §3): a delegate's output arrives in its REPLY, stale turns are told by the turn marks beside
 * the stream, the live flags are the coordinators' copy in Redis, and an origin reply's outcome comes back over Redis.
 *
 * Shutdown is two-phase: the first SIGINT/SIGTERM closes the harness gracefully (in-flight turns get the
 * configured grace, the rest are left for reclaim); a second signal exits at once with status 130.
 */
import { resolve as resolvePath } from "node:path";
import { pathToFileURL } from "node:url";
import type { RedisClient } from "../bus/redis-connection.js";
import type { Config } from "../config/index.js";
import { BusAuth } from "../bus/auth/bus-auth.js";
import { createRedisBus } from "../bus/redis-bus.js";
import { createRedisConnection } from "../bus/redis-connection.js";
import { untilDependenciesAnswer } from "../process/dependency-wait.js";
import { DependencyHealth } from "../process/dependency-health.js";
import { endpointsOf, notAnswering, whenAnswering } from "../process/service-endpoints.js";
import { readiness } from "../process/readiness.js";
import { createMetrics } from "../metrics/metrics.js";
import { startMetricsServer, type MetricsServer } from "../metrics/metrics-server.js";
import { assertRedisSafe } from "../bus/redis-check.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { MirroredFlags } from "../flags/mirrored-flags.js";
import type { Logger } from "../logger.js";
import { replyDeadlineMs } from "../replies/reply-limits.js";
import { waitForRedisReplyOutcome } from "../replies/redis-reply-outcome.js";
import { installProcessGuards } from "../process/process-guard.js";
import { createHarness } from "./harness.js";
import type { Handler } from "./types.js";

export interface HarnessProcessOptions {
  config: Config;
  /** Exactly one of `role` and `team`. */
  role?: string;
  team?: string;
  /** Module whose default export is the handler; relative paths resolve against `cwd`. */
  handlerPath: string;
  /** @defaultValue 10 */
  concurrency?: number;
  logger: Logger;
  /** @defaultValue process.cwd() */
  cwd?: string;
  /** Aborting it stops the process gracefully, like a first SIGINT/SIGTERM (for embedding and tests). */
  signal?: AbortSignal;
  /**
   * Obey the live flags (BUS_ENABLED, HARNESS_ENABLED, BUS_ROUTED): `config.flags` with table `flags` on top, as
   * the coordinators mirror it into Redis, re-read while running. `switchyard start harness` turns this on.
   * @defaultValue false (everything on)
   */
  liveFlags?: boolean;
  /**
   * Install the process-wide handlers of src/process/process-guard.ts (a stray dependency error is an outage, anything
   * else exits with 70). `switchyard start harness` turns this on. @defaultValue false
   */
  processGuards?: boolean;
}

/** How long each /readyz check may take. */
const READINESS_TIMEOUT_MS = 2_000;

/** Imports a handler module and checks that its default export is a function. Throws CONFIG otherwise. */
export async function loadHandler(handlerPath: string, cwd: string = process.cwd()): Promise<Handler> {
  const absolute = resolvePath(cwd, handlerPath);
  let module: { default?: unknown };
  try {
    module = await importHandlerModule(absolute);
  } catch (error) {
    if (error instanceof SwitchyardError) throw error;
    throw new SwitchyardError(ErrorCode.Config, `cannot load handler module ${absolute}: ${(error as Error).message ?? String(error)}`, {
      cause: error,
      details: { handlerPath: absolute },
    });
  }
  if (typeof module.default !== "function") {
    throw new SwitchyardError(
      ErrorCode.Config,
      `handler module ${absolute} must default-export a function (work, ctx) => output; its default export is ${describe(module.default)}`,
      { details: { handlerPath: absolute } },
    );
  }
  return module.default as Handler;
}

/**
 * Imports the module. The CLI runs compiled JavaScript, so plain Node cannot import a TypeScript handler: in a
 * checkout (tsx is a dev dependency) tsx is registered for it on first need; where tsx is not installed (the
 * image, an installed package) the error says to compile the handler.
 */
async function importHandlerModule(absolute: string): Promise<{ default?: unknown }> {
  const url = pathToFileURL(absolute).href;
  try {
    return (await import(url)) as { default?: unknown };
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ERR_UNKNOWN_FILE_EXTENSION" || !/\.[cm]?ts$/.test(absolute)) throw error;
    let tsx: { register(): unknown };
    try {
      tsx = (await import("tsx/esm/api")) as { register(): unknown };
    } catch {
      throw new SwitchyardError(ErrorCode.Config, `handler module ${absolute} is TypeScript and tsx is not installed: compile the handler to JavaScript (tsc) and pass the .js file`, {
        cause: error,
        details: { handlerPath: absolute },
      });
    }
    tsx.register();
    // Node keeps the failed import of `url` in its module map; the query makes the retry a fresh load.
    return (await import(`${url}?typescript`)) as { default?: unknown };
  }
}

function describe(value: unknown): string {
  if (value === undefined) return "missing";
  if (value === null) return "null";
  return `a ${typeof value}`;
}

/** Runs a harness process until a signal stops it; resolves after every connection is closed. */
export async function runHarnessProcess(options: HarnessProcessOptions): Promise<void> {
  const { config, logger } = options;
  if ((options.role === undefined) === (options.team === undefined)) {
    throw new SwitchyardError(ErrorCode.Config, "a harness process serves exactly one of --role or --team");
  }
  // A key for this queue (SWITCHYARD_BUS_KEY, or the master secret) is checked before anything is connected:
  // without it every outcome would be refused by the coordinator.
  const queue = options.role !== undefined ? `role:${options.role}` : `team:${options.team!}`;
  const signer = new BusAuth({ ...config.busAuth, maxPayloadBytes: config.bus.maxPayloadBytes }).signer(queue);
  // Load the handler before connecting anything: a typo in the path should fail fast and leave nothing open.
  const handler = await loadHandler(options.handlerPath, options.cwd);

  const metrics = createMetrics();
  const health = new DependencyHealth({ logger, metrics });
  const redis = createRedisConnection(config.redisUrl, { health });
  const bus = createRedisBus({
    redis,
    keyPrefix: config.bus.keyPrefix,
    maxPayloadBytes: config.bus.maxPayloadBytes,
    maxDeliveries: config.bus.maxDeliveries,
    logger,
    metrics,
  });
  const stop = new AbortController();
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals === 1) {
      logger.info({ signal }, "stopping gracefully; send the signal again to exit at once");
      stop.abort();
      return;
    }
    logger.warn({ signal }, "second signal: exiting without waiting for in-flight work");
    process.exit(130);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const removeGuards = options.processGuards ? installProcessGuards({ logger, health }) : () => {};
  const onAbort = (): void => stop.abort();
  if (options.signal?.aborted) stop.abort();
  else options.signal?.addEventListener("abort", onAbort, { once: true });

  const flags = options.liveFlags ? new MirroredFlags({ redis, keyPrefix: config.bus.keyPrefix, defaults: config.flags, logger, health }) : undefined;
  let metricsServer: MetricsServer | undefined;
  try {
    // Started while Redis is down (a restart during an outage): wait for it, as a running harness would.
    // Commands queue while Redis is away; a stop meanwhile closes the connection, which fails them and ends the wait.
    const stopWaiting = (): void => redis.disconnect();
    const endpoints = endpointsOf(config);
    stop.signal.addEventListener("abort", stopWaiting, { once: true });
    // A stop must end the wait even when a check is queued in ioredis' offline queue: disconnect() while it is
    // reconnecting leaves queued commands pending for good, so the attempt itself gives way to the stop.
    await untilDependenciesAnswer(() => untilStopped(stop.signal, async () => {
      if (redis.status === "wait") {
        await redis.connect().catch((error: unknown) => {
          // Named as Redis's, with address and variable: a bare ECONNREFUSED says nothing about whose socket it was.
          throw notAnswering(endpoints.redis, error);
        });
      }
      await assertRedisSafe(redis, { logger });
      if (flags) await whenAnswering(endpoints.redis, () => flags.refresh());
    }), { logger, signal: stop.signal }).finally(() => stop.signal.removeEventListener("abort", stopWaiting));
    flags?.start(stop.signal);
    if (config.metrics.port !== null) {
      metricsServer = await startMetricsServer({
        registry: metrics.registry,
        host: config.metrics.host,
        port: config.metrics.port,
        logger,
        readiness: () => readiness({ redis, health, timeoutMs: READINESS_TIMEOUT_MS }),
      });
      logger.info({ url: `${metricsServer.url}/metrics` }, "serving metrics and readiness");
    }
    const harness = createHarness({
      bus,
      ...(options.role !== undefined ? { role: options.role } : { team: options.team! }),
      handler,
      signer,
      concurrency: options.concurrency ?? 10,
      signal: stop.signal,
      logger,
      maxPayloadBytes: config.bus.maxPayloadBytes,
      reclaimIdleMs: config.bus.reclaimIdleMs,
      heartbeatMs: config.harness.heartbeatMs,
      shutdownGraceMs: config.harness.shutdownGraceMs,
      blockMs: config.bus.blockMs,
      replies: { waitForOutcome: (query, wait) => waitForRedisReplyOutcome(redis, config.bus.keyPrefix, query, wait), deadlineMs: replyDeadlineMs(config) },
      ...(flags ? { flags } : {}),
      health,
      metrics,
    });
    await harness.start();
  } finally {
    await metricsServer?.close();
    await flags?.stop();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    options.signal?.removeEventListener("abort", onAbort);
    // Every cleanup runs even when an earlier one fails.
    await bus.close().catch((error: unknown) => logger.warn({ err: error }, "closing the bus failed"));
    await quitRedis(redis);
    removeGuards();
  }
}

/** Runs `attempt`, rejecting with CANCELLED as soon as `signal` aborts (the attempt is left to settle on its own). */
function untilStopped<T>(signal: AbortSignal, attempt: () => Promise<T>): Promise<T> {
  // `interrupted`: the CLI exits 130, as for any command the operator stopped.
  const stopped = () => new SwitchyardError(ErrorCode.Cancelled, "stopped while waiting for Redis", { details: { interrupted: true } });
  if (signal.aborted) return Promise.reject(stopped());
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(stopped());
    signal.addEventListener("abort", onAbort, { once: true });
    attempt().then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** QUIT waits for Redis; when Redis is unreachable that could be forever, so it gets a second before a hard close. */
async function quitRedis(redis: RedisClient): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), 1_000);
  });
  const outcome = await Promise.race([redis.quit().catch(() => "failed" as const), timeout]);
  clearTimeout(timer);
  if (outcome !== "OK") redis.disconnect();
}
