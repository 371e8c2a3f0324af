/**
 * A full runtime (pool, Redis, bus, engine, task service) on a fresh test database and a unique key prefix.
 */
import { heldStepReleases } from "../../src/fairness/releaser.js";
import { parseRedisUrl } from "../../src/bus/redis-url.js";
import { defaultConfig, type Config } from "../../src/config/index.js";
import { Coordinator } from "../../src/coordinator/coordinator.js";
import { coordinatorOptionsFrom } from "../../src/coordinator-process.js";
import { createLogger } from "../../src/logger.js";
import { createRuntime, type Runtime, type RuntimeOptions } from "../../src/runtime.js";
import { createTestDatabase, type TestDatabase } from "./db.js";
import { redisUrl } from "./env.js";
import { TEST_BUS_SECRETS } from "./bus-auth.js";
import { deleteByPrefix, uniquePrefix } from "./redis.js";

export interface TestRuntime extends Runtime {
  db: TestDatabase;
  prefix: string;
  /** Starts a coordinator in this process; stopped by cleanup(). */
  startCoordinator(overrides?: Partial<ConstructorParameters<typeof Coordinator>[0]>): Coordinator;
  /**
   * Starts a coordinator on a runtime of its own (pool, engine, caches, live flags and limits), as a separate
   * process would have; both stopped by cleanup().
   */
  startSeparateCoordinator(consumer: string): Promise<Coordinator>;
  cleanup(): Promise<void>;
}

/** Every flag on except A2A egress (the flags tests and the egress tests switch things themselves). */
export const TEST_FLAGS: Config["flags"] = {
  busEnabled: true,
  coordinatorEnabled: true,
  coordinatorTenants: "*",
  harnessEnabled: true,
  harnessScopes: "*",
  busRouted: "*",
  egressEnabled: false,
  egressTenants: [],
  replyEnabled: false,
  replyTenants: [],
  pollMs: 1_000,
};

export function testConfig(
  db: TestDatabase,
  prefix: string,
  overrides: Partial<Config["coordinator"]> = {},
  bus: Partial<Config["bus"]> = {},
  redisDb?: number,
  flags: Partial<Config["flags"]> = {},
): Config {
  return {
    ...defaultConfig,
    redisUrl: redisDb === undefined ? redisUrl() : withDatabase(redisUrl(), redisDb),
    databaseUrl: db.url,
    logLevel: "silent",
    bus: { ...defaultConfig.bus, keyPrefix: prefix, blockMs: 100, reclaimIdleMs: 2000, ...bus },
    coordinator: { ...defaultConfig.coordinator, sweepIntervalMs: 100, outboxStaleMs: 500, defaultStepTimeoutMs: 5000, ...overrides },
    harness: { shutdownGraceMs: 1000, heartbeatMs: 500 },
    flags: { ...TEST_FLAGS, ...flags },
    busAuth: { secrets: TEST_BUS_SECRETS, publisherKeys: [] },
  };
}

/** A single Redis URL pointed at database `db` (a cluster has only database 0). */
function withDatabase(url: string, db: number): string {
  if (parseRedisUrl(url).kind === "cluster") throw new Error(`a test asked for Redis database ${db}, which a cluster (${url}) does not have`);
  const parsed = new URL(url);
  parsed.pathname = `/${db}`;
  return parsed.toString();
}

export async function createTestRuntime(
  options: RuntimeOptions & {
    coordinator?: Partial<Config["coordinator"]>;
    bus?: Partial<Config["bus"]>;
    redisDb?: number;
    /** Flag defaults over TEST_FLAGS (everything on but egress). */
    flags?: Partial<Config["flags"]>;
    /** Last word on the config (an encryption key, egress networks, …). */
    configure?: (config: Config) => Config;
  } = {},
): Promise<TestRuntime> {
  const db = await createTestDatabase();
  const prefix = uniquePrefix();
  const base = testConfig(db, prefix, options.coordinator, options.bus, options.redisDb, options.flags);
  const config = options.configure ? options.configure(base) : base;
  // TEST_LOG=debug (or info…) shows the runtime's structured logs while debugging a test.
  const logger = options.logger ?? (process.env.TEST_LOG ? createLogger({ level: process.env.TEST_LOG }) : undefined);
  const runtime = await createRuntime(config, { ...options, logger });
  const coordinators: Coordinator[] = [];
  const separate: Runtime[] = [];
  const testRuntime: TestRuntime = {
    ...runtime,
    db,
    prefix,
    async startSeparateCoordinator(consumer) {
      const own = await createRuntime(config, { ...options, logger });
      separate.push(own);
      await own.limits.refresh();
      return testRuntime.startCoordinator({ pool: own.pool, bus: own.bus, engine: own.engine, publisher: own.publisher, flags: own.flags, releases: heldStepReleases(own.limits, own.stores.heldSteps), consumer });
    },
    startCoordinator(overrides = {}) {
      const coordinator = new Coordinator(coordinatorOptionsFrom(runtime, { consumer: `test-${coordinators.length}`, releases: heldStepReleases(runtime.limits, runtime.stores.heldSteps), ...overrides }));
      coordinators.push(coordinator);
      void coordinator.start();
      return coordinator;
    },
    async cleanup() {
      await Promise.all(coordinators.map((c) => c.close()));
      await Promise.all(separate.map((r) => r.close()));
      await deleteByPrefix(runtime.redis, prefix).catch(() => {});
      await runtime.close();
      await db.drop();
    },
  };
  return testRuntime;
}

/**
 * Polls until `fn` returns a value, failing after a fixed total. For a single event with nothing to watch move
 * (an approval row appearing); to wait for tasks or steps to finish use waitForTask / waitForTasks /
 * waitForProgress from ./wait.ts, which fail only once nothing moves and say what is stuck.
 */
export async function waitFor<T>(fn: () => Promise<T | undefined | false>, options: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  for (;;) {
    const value = await fn();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${options.what ?? "condition"}`);
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
}
