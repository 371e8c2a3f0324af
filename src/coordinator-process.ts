/**
 * A coordinator built from a runtime with everything a deployed one runs beside its inbox: live flags, the
 * signed-checkpoint job (SWITCHYARD_CHECKPOINT_*), approval expiry, the FOREIGN sender and sweep, the origin-reply sender
 * and the relay of reply outcomes to the harnesses. `start coordinator`,
 * `start all` and the demo all use this, so they cannot drift apart. The test stack and the tests build theirs on
 * the same base (`coordinatorOptionsFrom`).
 */
import { heldStepReleases } from "./fairness/releaser.js";
import { approvalExpirySweep } from "./approvals/expiry.js";
import { consumerName } from "./bus/keys.js";
import { Coordinator, type CoordinatorOptions } from "./coordinator/coordinator.js";
import { checkpointJobOf, createCheckpointJob } from "./governance/checkpoint-job.js";
import type { Logger } from "./logger.js";
import type { Runtime } from "./runtime.js";
import { createReplyOutcomeRelay } from "./replies/reply-outcome-relay.js";
import { replyDeadlineMs } from "./replies/reply-limits.js";

export interface CreateCoordinatorOptions {
  consumer?: string;
  logger?: Logger;
  /** Run the FOREIGN sender and sweep beside the loops. @defaultValue true */
  foreignJobs?: boolean;
  /** Run the origin-reply sender (`runtime.replies.job`) and the reply-outcome relay beside the loops. @defaultValue true */
  replyJobs?: boolean;
}

export function createCoordinator(runtime: Runtime, options: CreateCoordinatorOptions = {}): Coordinator {
  const { config, pool, metrics } = runtime;
  const logger = options.logger ?? runtime.logger;
  return new Coordinator(
    coordinatorOptionsFrom(runtime, {
      consumer: options.consumer ?? consumerName("coordinator"),
      dedupeRetentionMs: config.coordinator.dedupeRetentionMs,
      shards: config.shards,
      logger,
      releases: heldStepReleases(runtime.limits, runtime.stores.heldSteps),
      health: runtime.health,
      checkpoints: createCheckpointJob({
        pool,
        stores: runtime.stores,
        operatorKey: config.checkpoints.signingKeyPem ?? undefined,
        everyRows: config.checkpoints.everyRows,
        everyMs: config.checkpoints.everyMs,
        logger,
        metrics,
      }),
      background: [
        ...(options.foreignJobs === false ? [] : runtime.foreignJobs),
        ...(options.replyJobs === false ? [] : [runtime.replies.job, replyOutcomeRelay(runtime, logger).job]),
      ],
    }),
  );
}

/** Copies reply outcomes into Redis for the harnesses' `ctx.reply`, which hold no database (issue 27 §3). */
function replyOutcomeRelay(runtime: Runtime, logger: Logger) {
  const { config } = runtime;
  // A request's entry must outlive the longest wait for it.
  const requestTtlMs = Math.max(10 * 60_000, 2 * replyDeadlineMs(config));
  return createReplyOutcomeRelay({ pool: runtime.pool, store: runtime.stores.replies, redis: runtime.redis, keyPrefix: config.bus.keyPrefix, requestTtlMs, logger });
}

/**
 * The options every coordinator over `runtime` shares: its pool, stores, bus, engine, publisher, bus verifier,
 * metrics, logger and live flags, the batch size, bus timings, sweep interval and trim length of its config, and
 * the default checkpoint job (unless `overrides` bring their own or `false`); `overrides` add to them or replace them.
 */
export function coordinatorOptionsFrom(runtime: Runtime, overrides: Partial<CoordinatorOptions> & Pick<CoordinatorOptions, "consumer">): CoordinatorOptions {
  const { config } = runtime;
  const options: CoordinatorOptions = {
    pool: runtime.pool,
    store: runtime.stores.coordinator,
    bus: runtime.bus,
    engine: runtime.engine,
    publisher: runtime.publisher,
    // Throws CONFIG without SWITCHYARD_BUS_SECRET: a coordinator never runs with an unauthenticated inbox.
    verifier: runtime.busAuth.verifier(),
    batchSize: config.coordinator.batchSize,
    blockMs: config.bus.blockMs,
    reclaimIdleMs: config.bus.reclaimIdleMs,
    sweepIntervalMs: config.coordinator.sweepIntervalMs,
    trimMaxLen: config.bus.trimMaxLen,
    metrics: runtime.metrics,
    logger: runtime.logger,
    flags: runtime.flags,
    flagStore: runtime.stores.flags,
    sweepJobs: [approvalExpirySweep(runtime.stores)],
    ...overrides,
  };
  // Built here, not by the coordinator: the job runs SQL, and coordinator/ loads no module that does.
  return { ...options, checkpoints: checkpointJobOf({ ...options, stores: runtime.stores }) ?? false };
}
