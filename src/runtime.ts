/**
 * The composition root: turns a Config into connected parts (pool, Redis, bus, caches, engine, publisher, task
 * service). Every process — CLI command, coordinator, harness, demo, tests — builds its parts here, so wiring
 * lives in one place. `close()` releases everything and is idempotent.
 */
import type { RedisClient } from "./bus/redis-connection.js";
import type { Config } from "./config/index.js";
import type { Bus } from "./bus/bus.js";
import { BusAuth } from "./bus/auth/bus-auth.js";
import { generateDevSecret } from "./bus/auth/bus-keys.js";
import { createRedisBus } from "./bus/redis-bus.js";
import { createRedisConnection } from "./bus/redis-connection.js";
import { DependencyHealth } from "./process/dependency-health.js";
import { notAnswering, redisEndpoint, type ServiceEndpoints } from "./process/service-endpoints.js";
import { assertRedisSafe } from "./bus/redis-check.js";
import { Engine } from "./coordinator/engine.js";
import type { ForeignDispatcher } from "./coordinator/foreign-dispatcher.js";
import { OutboxPublisher } from "./coordinator/outbox-publisher.js";
import { createPostgresEngineStore } from "./store/engine/postgres-engine-store.js";
import type { EgressSwitch, ReplySwitch } from "./store/engine/postgres-tenant-facts.js";
import { replyDeadlineMs, replyLimitsOf } from "./replies/reply-limits.js";
import { ReplyKicks } from "./replies/reply-kicks.js";
import { TaskService } from "./tasks/tasks.js";
import { FlaggedOutboxPublisher } from "./flags/flagged-publisher.js";
import type { FlagSwitches } from "./flags/flag-types.js";
import { LiveFlags } from "./flags/live-flags.js";
import { FlagMirror } from "./flags/flag-mirror.js";
import { LiveLimits } from "./fairness/live-limits.js";
import { PolicyCache } from "./governance/policy-store.js";
import { silentLogger, type Logger } from "./logger.js";
import { createMetrics, type Metrics } from "./metrics/metrics.js";
import { createPool, type Pool } from "./store/db.js";
import { assertSchemaCurrent } from "./store/migrate.js";
import { WorkflowCache } from "./store/workflow-store.js";
import { createA2ADispatcher } from "./foreign/dispatcher.js";
import type { A2AForeign, BackgroundJob } from "./foreign/a2a-foreign.js";
import { createSecretCipher } from "./vault/secret-cipher.js";
import type { ReplySender } from "./replies/reply-sender.js";
import { createDisabledReplySender } from "./replies/disabled-sender.js";
import { createPostgresStores } from "./store/postgres-stores.js";
import type { Stores } from "./store/stores.js";

export interface Runtime {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  pool: Pool;
  redis: RedisClient;
  /** Whether Postgres and Redis are reachable, as this process sees it (logs and counts each outage once). */
  health: DependencyHealth;
  bus: Bus;
  /** Signers for the identities this process publishes to the coordinator inbox as, and the inbox verifier. */
  busAuth: BusAuth;
  policies: PolicyCache;
  /** The storage ports outside the engine's (store/stores.ts), on Postgres: hand the one a feature needs to it. */
  stores: Stores;
  workflows: WorkflowCache;
  engine: Engine;
  publisher: OutboxPublisher;
  tasks: TaskService;
  /** Live flags (environment defaults + table `flags`, re-read every `config.flags.pollMs`); pass to coordinators and harnesses. */
  flags: LiveFlags;
  /** Dispatch limits (issue 15), re-read like the flags. */
  limits: LiveLimits;
  /** FOREIGN over A2A (sender, sweep, callback deps) when the engine uses the A2A dispatcher; undefined with `options.foreign`. */
  a2a: A2AForeign | undefined;
  /** Where the engine kicks the reply sender after a commit made rows pending: `replyKicks.attach(sender)`. */
  replyKicks: ReplyKicks;
  /** Periodic jobs a coordinator of this runtime runs (`new Coordinator({ …, background: runtime.foreignJobs })`). */
  foreignJobs: BackgroundJob[];
  /**
   * Dials pending origin replies (src/replies/). Its `job` runs among a coordinator's background jobs; `kick()` wakes
   * it at once (a no-op in a process that does not run the job). Without SWITCHYARD_SECRET_ENCRYPTION_KEY it dials
   * nothing and says so once.
   */
  replies: ReplySender;
  /**
   * Re-reads the flags table and writes the Redis mirror now: after a flag change made in this process, so a
   * harness reads the new value at once instead of stale rows this process mirrored when it opened.
   */
  flagsChanged(): Promise<void>;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  logger?: Logger;
  /** The Postgres `application_name` of this process's sessions (pg_stat_activity tells processes apart by it). @defaultValue "switchyard" */
  applicationName?: string;
  metrics?: Metrics;
  /** The FOREIGN port. @defaultValue the A2A adapter (src/foreign/dispatcher.ts) with its sender and sweep */
  foreign?: ForeignDispatcher;
  /** Where the engine learns whether A2A egress is on per tenant. @defaultValue the live flags (A2A_EGRESS_ENABLED) */
  egress?: EgressSwitch;
  /** Where the engine learns whether origin replies are on per tenant. @defaultValue the live flags (REPLY_ENABLED) */
  replies?: ReplySwitch;
  /** Kicked after a commit that made reply rows pending (the reply sender, src/replies/). @defaultValue none: it polls */
  replySender?: { kick(): void };
  /**
   * What the runtime's publisher obeys (BUS_ENABLED): with the bus off, outbox rows wait in Postgres.
   * @defaultValue the live flags
   */
  busSwitch?: Pick<FlagSwitches, "busEnabled">;
  /** Pool size; coordinators want a few, CLI commands one or two. @defaultValue 10 */
  poolSize?: number;
  /**
   * With neither SWITCHYARD_BUS_SECRET nor SWITCHYARD_BUS_KEY configured, generate a random bus secret for this
   * process (logged): right for single-process runs (`start all`, the demo, tests), where every publisher and the
   * coordinator share it. Standalone processes leave it off and refuse to publish or verify without keys.
   * @defaultValue false
   */
  devBusSecret?: boolean;
  /** Check the schema version and Redis eviction policy first. @defaultValue true */
  checks?: boolean;
  /**
   * Build the parts only a running process uses: the A2A sender, sweep and callback deps (`a2a`, `foreignJobs`)
   * and the reply sender that dials origin replies. A one-shot CLI command (`task start`, `task cancel`) sets
   * false: it runs no background job, and their modules (the A2A and MCP SDKs, the forge clients) are then never
   * loaded, which is most of its start-up time. Then `a2a` is undefined and `replies` dials nothing.
   * @defaultValue true
   */
  longRunning?: boolean;
  clock?: () => number;
  /** The process's dependency tracker, when it outlives this runtime (a start-up that retries). @defaultValue a new one */
  health?: DependencyHealth;
  /** How connection errors name the services (the CLI names its flags). @defaultValue the URLs as DATABASE_URL / REDIS_URL */
  endpoints?: ServiceEndpoints;
}

export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const logger = options.logger ?? silentLogger;
  const metrics = options.metrics ?? createMetrics();
  const health = options.health ?? new DependencyHealth({ logger, metrics, clock: options.clock });
  // A transaction idle for a lease's lifetime is a paused process: ended by Postgres so its locks (the shard
  // fence above all) do not hold a takeover back (src/store/shards/postgres-shard-store.ts).
  const pool = createPool({ connectionString: config.databaseUrl, max: options.poolSize ?? 10, health, idleInTransactionTimeoutMs: config.shards.leaseTtlMs, ...(options.applicationName ? { applicationName: options.applicationName } : {}) });
  // Commands wait in the offline queue across a Redis restart instead of failing; reconnects back off.
  const redis = createRedisConnection(config.redisUrl, { health });
  const stores = createPostgresStores();
  const flags = new LiveFlags({ db: pool, store: stores.flags, defaults: config.flags, logger, health });
  // Harnesses hold no database credentials: they obey the flags from this copy in Redis (flags/mirrored-flags.ts).
  const flagMirror = new FlagMirror({ flags, redis, keyPrefix: config.bus.keyPrefix, logger, health });
  const limits = new LiveLimits({ db: pool, store: stores.limits, pollMs: config.flags.pollMs, logger, health });
  let closed = false;
  let a2a: A2AForeign | undefined;
  let replies: ReplySender | undefined;
  const flagsChanged = async (): Promise<void> => {
    await flags.refresh();
    await flagMirror.flush();
  };
  const close = async () => {
    if (closed) return;
    closed = true;
    await a2a?.close();
    await replies?.close().catch(() => {});
    await flags.stop();
    await flagMirror.stop();
    await limits.stop();
    await bus.close().catch(() => {});
    redis.disconnect();
    await pool.end().catch(() => {});
  };
  const bus = createRedisBus({
    redis,
    keyPrefix: config.bus.keyPrefix,
    maxPayloadBytes: config.bus.maxPayloadBytes,
    maxDeliveries: config.bus.maxDeliveries,
    logger,
    // Dead letters the bus decides on (malformed envelopes, too many deliveries) count as well.
    metrics,
  });
  try {
    await redis.connect().catch((error: unknown) => {
      // Named as Redis's, with its address and variable: a bare ECONNREFUSED would read as the database's.
      throw notAnswering(options.endpoints?.redis ?? redisEndpoint(config.redisUrl), error);
    });
    if (options.checks !== false) {
      await assertSchemaCurrent(pool);
      await assertRedisSafe(redis, { logger });
    }
  } catch (error) {
    await close();
    throw error;
  }
  try {
    await flags.refresh();
  } catch (error) {
    // A database that is unreachable or behind is reported by the schema check (here or in the caller); until
    // the table can be read, the environment's defaults apply.
    logger.warn({ err: error }, "could not read table flags; using the environment's defaults until it can be read");
  }
  flags.start();
  flagMirror.start();
  // Like the flags: until the table can be read, no limits apply.
  await limits.refresh().catch((error: unknown) => logger.warn({ err: error }, "could not read table dispatch_limits; no limits until it can be read"));
  limits.start();
  const busAuth = createBusAuth(config, options, logger);
  const policies = new PolicyCache({ pool, store: stores.policies, ttlMs: 1000 });
  const workflows = new WorkflowCache(pool);
  const replyKicks = new ReplyKicks(options.replySender);
  const engine = new Engine({
    policies,
    workflows,
    foreign: options.foreign ?? createA2ADispatcher({ agents: stores.foreignAgents, bridges: stores.bridges, linkKeys: stores.linkKeys, onBridge: () => a2a?.sender.kick() }),
    store: createPostgresEngineStore({
      logger,
      metrics,
      maxPayloadBytes: config.bus.maxPayloadBytes,
      shardCount: config.shards.count,
      egress: options.egress ?? flags,
      replies: options.replies ?? flags,
    }),
    replyLimits: replyLimitsOf(config),
    replySender: replyKicks,
    approvalTtlMs: config.coordinator.approvalTtlMs,
    delegationLimits: { maxOutstanding: config.coordinator.maxOutstandingSubQueries, maxPerAttempt: config.coordinator.maxSubQueriesPerAttempt },
    maxPayloadBytes: config.bus.maxPayloadBytes,
    defaultStepTimeoutMs: config.coordinator.defaultStepTimeoutMs,
    auditHeadsInMemory: config.coordinator.auditHeadsInMemory,
    limits,
    logger,
    metrics,
    clock: options.clock,
  });
  const publisher = new FlaggedOutboxPublisher({ pool, store: stores.coordinator.outbox, bus, staleMs: config.coordinator.outboxStaleMs, logger, metrics, health }, options.busSwitch ?? flags);
  const tasks = new TaskService({ pool, engine, approvals: stores.approvals, tasks: stores.tasks, replies: stores.replies, publisher, maxPayloadBytes: config.bus.maxPayloadBytes, replyDeadlineMs: replyDeadlineMs(config) });
  const longRunning = options.longRunning ?? true;
  if (!options.foreign && longRunning) {
    const { createA2AForeign } = await import("./foreign/a2a-foreign.js");
    a2a = createA2AForeign({ config, pool, bridges: stores.bridges, agents: stores.foreignAgents, linkKeys: stores.linkKeys, publisher, logger, metrics, egress: options.egress ?? flags, flags, clock: options.clock, health, busAuth, limits });
  }
  replies = longRunning
    ? await createRuntimeReplySender(config, pool, stores, logger, metrics, health, options.replies ?? flags, options.clock)
    : createDisabledReplySender({ pool, store: stores.replies, logger });
  // The engine kicks after a commit that made reply rows pending; a caller's own sender (tests) wins.
  if (!options.replySender) replyKicks.attach(replies);
  return { config, logger, metrics, pool, redis, health, bus, busAuth, policies, stores, workflows, engine, publisher, tasks, flags, limits, a2a, foreignJobs: a2a?.jobs ?? [], replyKicks, replies, flagsChanged, close };
}

async function createRuntimeReplySender(
  config: Config,
  pool: Pool,
  stores: Stores,
  logger: Logger,
  metrics: Metrics,
  health: DependencyHealth,
  switches: ReplySwitch,
  clock: (() => number) | undefined,
): Promise<ReplySender> {
  const cipher = createSecretCipher(config.origin.encryptionKeys);
  if (!cipher) return createDisabledReplySender({ pool, store: stores.replies, logger });
  const { createReplySender } = await import("./replies/reply-sender.js");
  return createReplySender({
    pool,
    store: stores.replies,
    connections: stores.connections,
    cipher,
    egress: {
      allowedNetworks: config.foreign.allowedNetworks,
      connectTimeoutMs: config.foreign.connectTimeoutMs,
      maxResponseBytes: config.foreign.maxResponseBytes,
    },
    timeoutMs: config.origin.replyTimeoutMs,
    dialAttempts: config.origin.replyDialAttempts,
    intervalMs: Math.min(config.coordinator.sweepIntervalMs, 1_000),
    logger,
    metrics,
    health,
    // Re-checked at dial time: switching REPLY_ENABLED off stops replies already pending, not only new ones.
    replyEnabled: (orgId) => switches.replyEnabled(orgId),
    ...(clock ? { clock } : {}),
  });
}

function createBusAuth(config: Config, options: RuntimeOptions, logger: Logger): BusAuth {
  const { secrets, publisherKeys } = config.busAuth;
  const maxPayloadBytes = config.bus.maxPayloadBytes;
  if (secrets.length === 0 && publisherKeys.length === 0 && options.devBusSecret) {
    logger.warn("SWITCHYARD_BUS_SECRET is not set: bus authentication uses a random secret of this process only (fine for one process; set it for a deployment)");
    return new BusAuth({ secrets: [generateDevSecret()], maxPayloadBytes });
  }
  return new BusAuth({ secrets, publisherKeys, maxPayloadBytes });
}
