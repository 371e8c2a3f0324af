/**
 * A coordinator built from a runtime with everything a deployed one runs beside its inbox: live flags, the
 * signed-checkpoint job (SWITCHYARD_CHECKPOINT_*), the FOREIGN sender and sweep, and the origin-reply sender. `start coordinator`,
 * `start all` and the demo all use this, so they cannot drift apart.
 */
import { consumerName } from "./bus/keys.js";
import { Coordinator } from "./coordinator/coordinator.js";
import { createCheckpointJob } from "./governance/checkpoint-job.js";
import type { Logger } from "./logger.js";
import type { Runtime } from "./runtime.js";

export interface CreateCoordinatorOptions {
  consumer?: string;
  logger?: Logger;
  /** Run the FOREIGN sender and sweep beside the loops. @defaultValue true */
  foreignJobs?: boolean;
  /** Run the origin-reply sender (`runtime.replies.job`) beside the loops. @defaultValue true */
  replyJobs?: boolean;
}

export function createCoordinator(runtime: Runtime, options: CreateCoordinatorOptions = {}): Coordinator {
  const { config, pool, metrics } = runtime;
  const logger = options.logger ?? runtime.logger;
  return new Coordinator({
    pool,
    bus: runtime.bus,
    engine: runtime.engine,
    publisher: runtime.publisher,
    // Throws CONFIG without SWITCHYARD_BUS_SECRET: a coordinator never runs with an unauthenticated inbox.
    verifier: runtime.busAuth.verifier(),
    consumer: options.consumer ?? consumerName("coordinator"),
    batchSize: config.coordinator.batchSize,
    blockMs: config.bus.blockMs,
    reclaimIdleMs: config.bus.reclaimIdleMs,
    sweepIntervalMs: config.coordinator.sweepIntervalMs,
    trimMaxLen: config.bus.trimMaxLen,
    dedupeRetentionMs: config.coordinator.dedupeRetentionMs,
    shards: config.shards,
    logger,
    metrics,
    flags: runtime.flags,
    limits: runtime.limits,
    health: runtime.health,
    checkpoints: createCheckpointJob({
      pool,
      operatorKey: config.checkpoints.signingKeyPem ?? undefined,
      everyRows: config.checkpoints.everyRows,
      everyMs: config.checkpoints.everyMs,
      logger,
      metrics,
    }),
    background: [...(options.foreignJobs === false ? [] : runtime.foreignJobs), ...(options.replyJobs === false ? [] : [runtime.replies.job])],
  });
}
