/**
 * `createTestStack()`: Switchyard in one process for workflow-level tests — the REAL coordinator (engine, governor,
 * audit, outbox) and real harnesses on a real Redis and PostgreSQL, isolated on a scratch database created from
 * the migrations and a unique Redis key prefix, torn down leaving neither behind.
 *
 * Where the services are: `options.redisUrl` / `options.databaseUrl`, else REDIS_URL / DATABASE_URL (read by
 * src/config/index.ts), else the local defaults. The database named in the URL is only used to reach the server: the
 * stack creates its own next to it (the role needs CREATEDB).
 *
 * Timings are the tests' (100 ms reads and sweeps, 5 s step timeout) so a retry or a timeout is seen in seconds.
 *
 * The surface is curated: workflows, handlers, tasks, step waits, approvals and a tenant API client. The connected
 * parts behind them (pool, bus, task service…) are not part of it; the repo's own tests that need them call
 * `testStackInternals(stack)`, which this module exports and `switchyard/testing` does not.
 */
import { heldStepReleases } from "../fairness/releaser.js";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { Coordinator } from "../coordinator/coordinator.js";
import { coordinatorOptionsFrom } from "../coordinator-process.js";
import type { TaskView } from "../tasks/tasks.js";
import { defaultConfig, loadConfig, type Config } from "../config/index.js";
import { assertRedisSafe } from "../bus/redis-check.js";
import { deleteKeys } from "../bus/redis-scan.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { createHarness, type Harness } from "../harness/harness.js";
import type { Handler } from "../harness/types.js";
import type { Logger } from "../logger.js";
import { createRuntime, type Runtime } from "../runtime.js";
import { defaultMigrationsDir, migrate } from "../store/migrate.js";
import { createDatabase, dropDatabase, listDatabases } from "../store/scratch-databases.js";
import { createStepResultReader } from "../store/step-result-reader.js";
import { createStepTurnCheck } from "../store/step-turn-check.js";
import { submitWorkflow, type SubmittedWorkflow } from "../store/workflow-store.js";
import { parseWorkflowDefinition } from "../workflow/definition.js";
import type { SwitchyardClient } from "./client.js";
import { waitForTask, type WaitForTaskOptions } from "./progress-wait.js";
import { createStackClient, type StackClient } from "./stack-client.js";
import { decideApproval, waitForStep, type ApprovalDecision, type DecideOptions, type WaitForStepOptions } from "./stack-waits.js";
import type { StepView } from "../tasks/tasks.js";

/** Scratch databases are named `sy_stack_<pid>_<random>`: a later stack drops those of processes that died. */
const DATABASE_PREFIX = "sy_stack_";

export interface TestStackOptions {
  /** @defaultValue REDIS_URL, else redis://127.0.0.1:6379 */
  redisUrl?: string;
  /** Any database on the server to use; the stack creates its own beside it. @defaultValue DATABASE_URL, else the local default */
  databaseUrl?: string;
  /**
   * The tenant the stack's workflows and tasks belong to, created with an API key for `client` (so a tenant id:
   * lower-case letters, digits, `_`, `-`). @defaultValue "test-org"
   */
  orgId?: string;
  /** Structured logs of the coordinator and harnesses. @defaultValue silent */
  logger?: Logger;
  /** Last word on the configuration (timings, limits, flags). */
  configure?: (config: Config) => Config;
}

export interface RegisterOptions {
  /** @defaultValue 4 */
  concurrency?: number;
}

export interface TestStack {
  readonly orgId: string;
  readonly config: Config;
  /** The scratch database's URL. */
  readonly databaseUrl: string;
  /** The Redis key prefix every key of this stack lives under. */
  readonly keyPrefix: string;
  /** Submits a workflow definition (YAML or JSON text, or an object as in a file) for the stack's tenant. */
  submitWorkflow(source: string | object): Promise<SubmittedWorkflow>;
  /** Starts a harness running `handler` on `queue` (`role:NAME`, `team:NAME`, or a bare role name). */
  register(queue: string, handler: Handler<never, unknown>, options?: RegisterOptions): Harness;
  /** Starts a task of `workflow` (`name` or `name@version`); returns its id. */
  startTask(workflow: string, input?: unknown, options?: { idempotencyKey?: string }): Promise<string>;
  /** Waits for the task to finish while it keeps moving; fails, saying which steps are stuck, once nothing moved for `stallMs`. */
  waitForTask(taskId: string, options?: WaitForTaskOptions): Promise<TaskView>;
  /** `startTask` then `waitForTask`. */
  runTask(workflow: string, input?: unknown, options?: WaitForTaskOptions): Promise<TaskView>;
  /**
   * Waits until step `stepId` of the task reaches `options.status` — by default until it has settled: `completed`,
   * `failed`, `cancelled` or `parked` (waiting on an approval or a foreign agent). Waits while the task keeps
   * moving; fails once nothing moved for `stallMs`, saying which steps are stuck, and at once (FAILED_PRECONDITION,
   * `details.reason` STEP_STATUS_UNREACHABLE) when the step or the task ended in another status.
   */
  waitForStep(taskId: string, stepId: string, options?: WaitForStepOptions): Promise<StepView>;
  /**
   * Approves the task's pending approval (of step `stepId`; without it, the only one pending) through
   * `ApprovalService.Decide`, as a tenant would: the decision is audited and the parked hop goes on. Waits for the
   * step to park first, while the task keeps moving. Throws a SwitchyardError FAILED_PRECONDITION whose
   * `details.reason` says what is pending: NO_PENDING_APPROVAL (none, and none can come: the task or step ended, or
   * nothing moved for `stallMs`) or SEVERAL_PENDING_APPROVALS (name the step; `details.pending` lists them).
   */
  approve(taskId: string, stepId?: string, options?: DecideOptions): Promise<ApprovalDecision>;
  approve(taskId: string, options: DecideOptions): Promise<ApprovalDecision>;
  /** As `approve`, but denies: the step fails closed with POLICY_DENIED, and the task as its workflow then goes. */
  deny(taskId: string, stepId?: string, options?: DecideOptions): Promise<ApprovalDecision>;
  deny(taskId: string, options: DecideOptions): Promise<ApprovalDecision>;
  /**
   * The `switchyard/client` clients for the stack's tenant, over an in-process transport to the gateway's own
   * services: calls pass the gateway's auth (an API key of the tenant, named `test-stack`) and error handling, run
   * under row-level security, and fail with a ConnectError, as against a deployed gateway.
   */
  readonly client: SwitchyardClient;
  /** Stops the harnesses and the coordinator, deletes the keys and drops the database. Idempotent. */
  close(): Promise<void>;
}

/** Every live flag on except A2A egress and origin replies, which need a configured outside world. */
const STACK_FLAGS: Config["flags"] = {
  ...defaultConfig.flags,
  busEnabled: true,
  coordinatorEnabled: true,
  coordinatorTenants: "*",
  harnessEnabled: true,
  harnessScopes: "*",
  busRouted: "*",
};

function stackConfig(redisUrl: string, databaseUrl: string, keyPrefix: string): Config {
  return {
    ...defaultConfig,
    redisUrl,
    databaseUrl,
    logLevel: "silent",
    bus: { ...defaultConfig.bus, keyPrefix, blockMs: 100, reclaimIdleMs: 2000 },
    coordinator: { ...defaultConfig.coordinator, sweepIntervalMs: 100, outboxStaleMs: 500, defaultStepTimeoutMs: 5000 },
    harness: { shutdownGraceMs: 1000, heartbeatMs: 500 },
    flags: STACK_FLAGS,
  };
}

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Drops the scratch databases of stacks whose process is gone (a test run killed before its teardown). */
async function dropAbandoned(admin: pg.Client): Promise<void> {
  for (const datname of await listDatabases(admin, DATABASE_PREFIX)) {
    const pid = Number(/^sy_stack_(\d+)_/.exec(datname)?.[1]);
    if (Number.isInteger(pid) && !processAlive(pid)) await dropDatabase(admin, datname).catch(() => {});
  }
}

async function withAdmin<T>(serverUrl: string, fn: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: withDatabase(serverUrl, "postgres") });
  try {
    await admin.connect();
  } catch (error) {
    throw new SwitchyardError(ErrorCode.Unavailable, `createTestStack: cannot reach PostgreSQL at ${new URL(serverUrl).host} (set DATABASE_URL): ${(error as Error).message}`, { cause: error });
  }
  try {
    return await fn(admin);
  } finally {
    await admin.end().catch(() => {});
  }
}

function queueOf(queue: string): { role: string } | { team: string } {
  if (queue.startsWith("role:")) return { role: queue.slice(5) };
  if (queue.startsWith("team:")) return { team: queue.slice(5) };
  if (queue.includes(":")) throw new SwitchyardError(ErrorCode.InvalidArgument, `a handler runs on role:NAME or team:NAME, not ${JSON.stringify(queue)}`);
  return { role: queue };
}

/** What the repo's own tests reach behind a stack's curated surface. Not exported by `switchyard/testing`. */
export interface TestStackInternals {
  /** The connected parts (pool, bus, task service…). */
  readonly runtime: Runtime;
}

const internals = new WeakMap<TestStack, TestStackInternals>();

/** The parts behind `stack` (the repo's tests only: `switchyard/testing` does not export this). */
export function testStackInternals(stack: TestStack): TestStackInternals {
  const found = internals.get(stack);
  if (!found) throw new SwitchyardError(ErrorCode.InvalidArgument, "testStackInternals: not a stack made by createTestStack");
  return found;
}

function decideArgs(stepOrOptions: string | DecideOptions | undefined, options: DecideOptions | undefined): { stepId: string | undefined; options: DecideOptions } {
  if (typeof stepOrOptions === "object" && stepOrOptions !== null) return { stepId: undefined, options: stepOrOptions };
  return { stepId: stepOrOptions, options: options ?? {} };
}

export async function createTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const env = options.redisUrl !== undefined && options.databaseUrl !== undefined ? undefined : loadConfig();
  const redisUrl = options.redisUrl ?? env!.redisUrl;
  const serverUrl = options.databaseUrl ?? env!.databaseUrl;
  const orgId = options.orgId ?? "test-org";
  const token = randomBytes(5).toString("hex");
  const name = `${DATABASE_PREFIX}${process.pid}_${token}`;
  const databaseUrl = withDatabase(serverUrl, name);
  const keyPrefix = `sytest:${token}:`;

  await withAdmin(serverUrl, async (admin) => {
    await dropAbandoned(admin);
    await createDatabase(admin, name);
  });
  const dropScratch = () => withAdmin(serverUrl, (admin) => dropDatabase(admin, name));

  let runtime: Runtime;
  let api: StackClient;
  const base = stackConfig(redisUrl, databaseUrl, keyPrefix);
  const config = options.configure ? options.configure(base) : base;
  try {
    await migrate({ connectionString: databaseUrl, createDatabase: false, dir: defaultMigrationsDir });
    // checks off: the schema is the one just migrated (and the runtime's own check would look for the migrations
    // beside the compiled code, where an installed package has none); Redis is still checked below.
    runtime = await createRuntime(config, { devBusSecret: true, checks: false, ...(options.logger ? { logger: options.logger } : {}), applicationName: "switchyard-test-stack" });
    try {
      await assertRedisSafe(runtime.redis, { logger: runtime.logger });
      api = await createStackClient(runtime, orgId);
    } catch (error) {
      await runtime.close();
      throw error;
    }
  } catch (error) {
    await dropScratch().catch(() => {});
    throw error;
  }

  const coordinator = new Coordinator(coordinatorOptionsFrom(runtime, { consumer: `stack-${token}`, releases: heldStepReleases(runtime.limits, runtime.stores.heldSteps) }));
  void coordinator.start();
  const harnesses: Harness[] = [];
  const resultReader = createStepResultReader({ db: runtime.pool });
  const turnCheck = createStepTurnCheck({ db: runtime.pool });
  let closing: Promise<void> | undefined;

  const stack: TestStack = {
    orgId,
    config,
    client: api.client,
    databaseUrl,
    keyPrefix,
    async submitWorkflow(source) {
      return submitWorkflow(runtime.pool, orgId, parseWorkflowDefinition(source));
    },
    register(queue, handler, registerOptions = {}) {
      if (closing) throw new SwitchyardError(ErrorCode.FailedPrecondition, "the test stack is closed");
      const target = queueOf(queue);
      const identity = "role" in target ? `role:${target.role}` : `team:${target.team}`;
      const harness = createHarness({
        bus: runtime.bus,
        ...target,
        handler,
        signer: runtime.busAuth.signer(identity),
        concurrency: registerOptions.concurrency ?? 4,
        maxPayloadBytes: config.bus.maxPayloadBytes,
        reclaimIdleMs: config.bus.reclaimIdleMs,
        heartbeatMs: config.harness.heartbeatMs,
        shutdownGraceMs: config.harness.shutdownGraceMs,
        blockMs: config.bus.blockMs,
        resultReader,
        turnCheck,
        flags: runtime.flags,
        logger: runtime.logger,
      });
      harnesses.push(harness);
      void harness.start();
      return harness;
    },
    async startTask(workflow, input = null, startOptions = {}) {
      const started = await runtime.tasks.start({ orgId, workflow, input, ...(startOptions.idempotencyKey ? { idempotencyKey: startOptions.idempotencyKey } : {}) });
      return started.taskId;
    },
    waitForTask(taskId, waitOptions = {}) {
      return waitForTask(runtime.tasks, orgId, taskId, waitOptions);
    },
    async runTask(workflow, input, waitOptions) {
      return stack.waitForTask(await stack.startTask(workflow, input), waitOptions);
    },
    waitForStep(taskId, stepId, waitOptions = {}) {
      return waitForStep(runtime.tasks, orgId, taskId, stepId, waitOptions);
    },
    approve(taskId: string, stepOrOptions?: string | DecideOptions, decideOptions?: DecideOptions) {
      return decideApproval(api.client, runtime.tasks, orgId, { taskId, approve: true, ...decideArgs(stepOrOptions, decideOptions) });
    },
    deny(taskId: string, stepOrOptions?: string | DecideOptions, decideOptions?: DecideOptions) {
      return decideApproval(api.client, runtime.tasks, orgId, { taskId, approve: false, ...decideArgs(stepOrOptions, decideOptions) });
    },
    close() {
      closing ??= (async () => {
        api.close();
        await Promise.all(harnesses.map((h) => h.close()));
        await coordinator.close();
        await deleteKeys(runtime.redis, `${keyPrefix}*`).catch(() => {});
        await runtime.close();
        await dropScratch();
      })();
      return closing;
    },
  };
  internals.set(stack, { runtime });
  return stack;
}
