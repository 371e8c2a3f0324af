/**
 * A coordinator plus harnesses for the example roles, all in one process, sharing one runtime (one pool, one
 * Redis connection and bus). For development (`start all`) and the demo; production runs them as separate
 * processes (`start coordinator`, `start harness`).
 */
import { createCoordinator } from "../coordinator-process.js";
import type { Config } from "../config/index.js";
import { Coordinator } from "../coordinator/coordinator.js";
import { createHarness, type Harness } from "../harness/harness.js";
import { loadHandler } from "../harness/process.js";
import type { Logger } from "../logger.js";
import type { Runtime } from "../runtime.js";
import type { GatewayOptions } from "../gateway/options.js";
import { startGateway, type Gateway } from "../gateway/server.js";
import { openRuntime } from "../cli/context.js";
import { createStepResultReader } from "../store/step-result-reader.js";
import { replyDeadlineMs } from "../replies/reply-limits.js";
import { waitForRedisReplyOutcome } from "../replies/redis-reply-outcome.js";

import { exampleHandlerPath } from "./example-handlers.js";

export { EXAMPLE_ROLES } from "./example-handlers.js";

export interface DevStackOptions {
  config: Config;
  logger: Logger;
  /** Each role is served by `examples/handlers/<role>.ts`. */
  roles: readonly string[];
  /** The coordinator's consumer name. @defaultValue unique per process */
  consumer?: string;
  /** Handlers running at once per role. @defaultValue 10 */
  concurrency?: number;
  /**
   * Also serve the API gateway on this runtime (`start all`). If it cannot listen (port in use), the stack does not
   * start: nothing is left running and the error says which address (a stack that quietly ran without its API
   * would leave `--url` clients talking to whatever holds the port).
   */
  gateway?: GatewayOptions;
  /** Wait for an unreachable Postgres or Redis instead of failing (`start all`). @defaultValue false */
  waitForDependencies?: boolean;
}

export interface DevStack {
  runtime: Runtime;
  coordinator: Coordinator;
  harnesses: readonly Harness[];
  /** The API gateway, when asked for. */
  gateway?: Gateway;
  /** Settles when every loop has ended; rejects with the first part that crashed. */
  done: Promise<void>;
  /** Stops everything gracefully and closes every connection. Idempotent. */
  stop(): Promise<void>;
}

export async function startDevStack(options: DevStackOptions): Promise<DevStack> {
  const { config, logger } = options;
  // Load every handler before connecting anything: a broken example fails fast and leaves nothing open.
  const handlers = await Promise.all(options.roles.map((role) => loadHandler(exampleHandlerPath(role))));
  // One process publishes and verifies everything, so without SWITCHYARD_BUS_SECRET a random one serves.
  const runtime = await openRuntime(config, { logger, poolSize: 10, devBusSecret: true, waitForDependencies: options.waitForDependencies ?? false });
  const coordinator = createCoordinator(runtime, { consumer: options.consumer, logger });
  let harnesses: Harness[];
  try {
    const resultReader = createStepResultReader({ db: runtime.pool });
    harnesses = options.roles.map((role, i) =>
      createHarness({
        bus: runtime.bus,
        role,
        handler: handlers[i]!,
        signer: runtime.busAuth.signer(`role:${role}`),
        concurrency: options.concurrency ?? 10,
        logger,
        maxPayloadBytes: config.bus.maxPayloadBytes,
        reclaimIdleMs: config.bus.reclaimIdleMs,
        heartbeatMs: config.harness.heartbeatMs,
        shutdownGraceMs: config.harness.shutdownGraceMs,
        blockMs: config.bus.blockMs,
        resultReader,
        replies: { waitForOutcome: (query, wait) => waitForRedisReplyOutcome(runtime.redis, config.bus.keyPrefix, query, wait), deadlineMs: replyDeadlineMs(config) },
        flags: runtime.flags,
        health: runtime.health,
        metrics: runtime.metrics,
      }),
    );
  } catch (error) {
    await runtime.close();
    throw error;
  }
  let gateway: Gateway | undefined;
  if (options.gateway) {
    try {
      gateway = await startGateway(runtime, options.gateway);
    } catch (error) {
      await runtime.close();
      throw error;
    }
  }
  const runs = [coordinator.start(), ...harnesses.map((h) => h.start())];
  const done = Promise.all(runs).then(() => undefined);
  // Observed here so a crash is never an unhandled rejection; callers still see it through `done`.
  done.catch((error: unknown) => logger.error({ err: error }, "a part of the in-process stack crashed"));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await gateway?.close();
      await Promise.allSettled([coordinator.close(), ...harnesses.map((h) => h.close())]);
      await Promise.allSettled(runs);
      await runtime.close();
    })());
  return { runtime, coordinator, harnesses, ...(gateway ? { gateway } : {}), done, stop };
}
