/**
 * The Switchyard under test, wired in this process the way `createRuntime` wires a coordinator: a scratch database
 * with every migration, the runtime's pool / Redis / bus / caches, and the real engine, outbox publisher and
 * coordinator (probed subclasses, see probe.ts). Harnesses get their own Redis connection, as a worker process
 * would have.
 *
 * Tasks can be created in bulk (one INSERT for the tasks, one for their pending steps) — that is set-up, not the
 * system under test — but every task's first dispatch goes through the engine (`startTasks`: `task_started`
 * events applied in coordinator-sized batches, then published from the outbox), exactly as `TaskService.start`
 * does it one task at a time.
 */
import { heldStepReleases } from "../../src/fairness/releaser.js";
import { BusAuth } from "../../src/bus/auth/bus-auth.js";
import { BENCH_BUS_SECRETS } from "../support.js";
import { GATEWAY_SENDER } from "../../src/bus/auth/bus-keys.js";
import { insertStartEnvelopes } from "../../src/tasks/start-envelope.js";
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { Redis } from "ioredis";
import { defaultConfig, type Config } from "../../src/config/index.js";
import type { Bus } from "../../src/bus/bus.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { streamKey } from "../../src/bus/keys.js";
import { approvalExpirySweep } from "../../src/approvals/expiry.js";
import { createCheckpointJob } from "../../src/governance/checkpoint-job.js";
import { COORDINATOR_GROUP, Coordinator } from "../../src/coordinator/coordinator.js";
import { pendingWorkflowStep } from "../../src/core/model.js";
import { saveSteps } from "../../src/store/engine/postgres-task-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import type { WorkflowDefinition } from "../../src/domain.js";
import { createHarness, type Handler, type Harness } from "../../src/harness/index.js";
import { ALL_ON } from "../../src/flags/flag-types.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import type { ScenarioContext, ScratchDatabase } from "../support.js";
import { startHarnessProcess, type HarnessProcess } from "./harness-child.js";
import { noopHandler } from "./noop-handler.js";
import { ProbedEngine, ProbedPublisher, type CpuSources } from "./probe.js";
import { createPostgresEngineStore } from "../../src/store/engine/postgres-engine-store.js";
import { DEFAULT_SHARD_COUNT } from "../../src/bus/shards.js";

export const BENCH_ORG = "bench-org";
const STEP_TIMEOUT_MS = 10 * 60_000;
/** The example every test and bench shares: three sequential `role:echo` steps. */
const WORKFLOW_FILE = new URL("../../examples/workflows/three-step.yaml", import.meta.url);

export interface SystemOptions {
  /** Inbound envelopes per coordinator transaction. @defaultValue the config default (200) */
  batchSize?: number;
  /** Pool size of the coordinator's runtime. @defaultValue 10 */
  poolSize?: number;
  /** Obey the dispatch limits (`runtime.limits`, table dispatch_limits) and run the releaser (issue 15). @defaultValue false */
  limits?: boolean;
}

export interface BenchSystem {
  config: Config;
  db: ScratchDatabase;
  runtime: Runtime;
  engine: ProbedEngine;
  publisher: ProbedPublisher;
  workflow: { name: string; version: number; definition: WorkflowDefinition };
  /** Inserts `count` running tasks with pending steps (bulk set-up; nothing dispatched), spread over `tenants` (default: the bench's one). */
  createTasks(count: number, tenants?: readonly string[]): Promise<string[]>;
  /** Dispatches each task's first step through the engine, `batch` tasks per transaction, and publishes. */
  startTasks(taskIds: readonly string[], batch?: number): Promise<void>;
  /**
   * Starts the tasks as the gateway does (issue 11 §2): one `task_started` envelope per task, signed as the gateway,
   * into the outbox and published to the tenant's shard inbox; the coordinator applies them in its own batches.
   */
  startTasksThroughOwner(taskIds: readonly string[]): Promise<void>;
  /** A coordinator on the shared inbox; `close()` it (or let `close()` here do it). */
  startCoordinator(consumer?: string): Coordinator;
  /** A harness on `role:echo` with its own Redis connection. */
  startHarness(options: { concurrency: number; handler?: Handler; consumer?: string }): Promise<Harness>;
  /** A no-op harness on `role:echo` in a child process (see harness-child.ts). */
  startHarnessProcess(options: { concurrency: number }): Promise<HarnessProcess>;
  /** Where `sampleCpu` reads Redis and the Postgres backends of the scratch database. */
  cpuSources: CpuSources;
  /** How many inbox entries the coordinator group has read and acknowledged (read − pending). */
  inboxProgress(): Promise<{ read: number; pending: number; acked: number }>;
  /** Stops coordinators and harnesses, closes connections. The scratch database is dropped by the runner. */
  close(): Promise<void>;
}

export async function createBenchSystem(ctx: ScenarioContext, options: SystemOptions = {}): Promise<BenchSystem> {
  const db = await ctx.createScratchDatabase();
  const config: Config = {
    ...defaultConfig,
    redisUrl: ctx.redisUrl,
    databaseUrl: db.url,
    logLevel: "silent",
    // The bench's key prefix ends in ":" and holds no braces, as the bus requires.
    bus: { ...defaultConfig.bus, keyPrefix: ctx.keyPrefix, blockMs: 100 },
    coordinator: { ...defaultConfig.coordinator, batchSize: options.batchSize ?? defaultConfig.coordinator.batchSize },
    busAuth: { secrets: BENCH_BUS_SECRETS, publisherKeys: [] },
  };
  const metrics = createMetrics();
  const runtime = await createRuntime(config, { metrics, poolSize: options.poolSize ?? 10 });
  const closers: Array<() => Promise<unknown>> = [];
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    for (const closer of closers.reverse()) await closer().catch(() => {});
    await runtime.close();
  };
  ctx.defer(close);

  const engine = new ProbedEngine({
    // Egress and replies off, as the coordinator's defaults are without flags.
    store: createPostgresEngineStore({ logger: runtime.logger, metrics, maxPayloadBytes: config.bus.maxPayloadBytes, shardCount: DEFAULT_SHARD_COUNT }),
    policies: runtime.policies,
    workflows: runtime.workflows,
    maxPayloadBytes: config.bus.maxPayloadBytes,
    defaultStepTimeoutMs: config.coordinator.defaultStepTimeoutMs,
    auditHeadsInMemory: config.coordinator.auditHeadsInMemory,
    logger: runtime.logger,
    metrics,
    ...(options.limits ? { limits: runtime.limits } : {}),
  });
  const publisher = new ProbedPublisher({ pool: runtime.pool, store: runtime.stores.coordinator.outbox, bus: runtime.bus, staleMs: config.coordinator.outboxStaleMs, logger: runtime.logger, metrics });
  publisher.profile = engine.profile;

  // The example's 5 s step timeout would fire while a large untimed set-up is still running (the sweeper would
  // then re-dispatch steps and add hops); the bench copy waits 10 minutes and is otherwise the same.
  const example = parseWorkflowDefinition(await readFile(WORKFLOW_FILE, "utf8"));
  const definition: WorkflowDefinition = { ...example, name: "bench-three-step", steps: example.steps.map((s) => ({ ...s, timeoutMs: STEP_TIMEOUT_MS })) };
  const submitted = await submitWorkflow(runtime.pool, BENCH_ORG, definition);
  const workflow = { name: submitted.name, version: submitted.version, definition };

  // Tenants with the workflow submitted, by version; each task's tenant (startTasks needs it).
  const versions = new Map([[BENCH_ORG, submitted.version]]);
  const orgOf = new Map<string, string>();
  const createTasks = async (count: number, tenants: readonly string[] = [BENCH_ORG]): Promise<string[]> => {
    for (const tenant of tenants) if (!versions.has(tenant)) versions.set(tenant, (await submitWorkflow(runtime.pool, tenant, definition)).version);
    const ids = Array.from({ length: count }, () => randomUUID());
    ids.forEach((id, i) => orgOf.set(id, tenants[i % tenants.length]!));
    const chunk = 2_000;
    for (let i = 0; i < ids.length; i += chunk) {
      const slice = ids.slice(i, i + chunk);
      const orgs = slice.map((id) => orgOf.get(id)!);
      await runtime.pool.query(
        `INSERT INTO tasks (id, org_id, workflow_name, workflow_version, input, status, budget, cost)
         SELECT id, org, $3, version, '{}'::jsonb, 'running', $4, 0 FROM unnest($1::uuid[], $2::text[], $5::int[]) AS x(id, org, version)`,
        [slice, orgs, workflow.name, definition.budget, orgs.map((org) => versions.get(org)!)],
      );
      await saveSteps(runtime.pool, slice.flatMap((taskId) => definition.steps.map((s) => pendingWorkflowStep(taskId, orgOf.get(taskId)!, s))));
    }
    // Bulk loads outrun autovacuum: without statistics the planner seq-scans `steps` for every batch (17 ms
    // instead of 0.7 ms at 60k rows). A live system gets them from autovacuum within a minute.
    await runtime.pool.query("ANALYZE tasks, steps");
    return ids;
  };

  const startTasks = async (taskIds: readonly string[], batch = config.coordinator.batchSize): Promise<void> => {
    for (let i = 0; i < taskIds.length; i += batch) {
      const inputs = taskIds.slice(i, i + batch).map((taskId) => ({ orgId: orgOf.get(taskId) ?? BENCH_ORG, taskId, event: { type: "task_started" as const, eventId: `start:${taskId}` } }));
      const result = await engine.apply(runtime.pool, inputs);
      await publisher.publish(result.outbox);
    }
  };

  const gatewaySigner = runtime.busAuth.signer(GATEWAY_SENDER);
  const startTasksThroughOwner = async (taskIds: readonly string[]): Promise<void> => {
    const byOrg = new Map<string, Array<{ taskId: string }>>();
    for (const taskId of taskIds) {
      const orgId = orgOf.get(taskId) ?? BENCH_ORG;
      let created = byOrg.get(orgId);
      if (!created) byOrg.set(orgId, (created = []));
      created.push({ taskId });
    }
    for (const [orgId, created] of byOrg) {
      const rows = await insertStartEnvelopes(runtime.stores.tasks, runtime.pool, orgId, created, { signer: gatewaySigner, shardCount: config.shards.count });
      await publisher.publish(rows);
    }
  };

  let coordinators = 0;
  const startCoordinator = (consumer = `bench-coordinator-${++coordinators}`): Coordinator => {
    const coordinator = new Coordinator({
      pool: runtime.pool,
      store: runtime.stores.coordinator,
      bus: runtime.bus,
      engine,
      publisher,
      verifier: runtime.busAuth.verifier(),
      consumer,
      batchSize: config.coordinator.batchSize,
      blockMs: config.bus.blockMs,
      reclaimIdleMs: config.bus.reclaimIdleMs,
      sweepIntervalMs: config.coordinator.sweepIntervalMs,
      trimMaxLen: config.bus.trimMaxLen,
      logger: runtime.logger,
      metrics,
      // As `switchyard start coordinator` runs it (with live flags), every flag on: the per-entry tenant checks
      // are part of the hop's cost.
      flags: ALL_ON,
      flagStore: runtime.stores.flags,
      // As every composition root runs it (coordinator-process.ts): the expiry query is part of each sweep's cost.
      sweepJobs: [approvalExpirySweep(runtime.stores)],
      // The default checkpoint signer, as every composition root hands it in (coordinatorOptionsFrom).
      checkpoints: createCheckpointJob({ pool: runtime.pool, stores: runtime.stores, logger: runtime.logger, metrics }),
      // Tasks created in bulk wait with their first step pending (it has no needs) until the bench starts them; on a
      // loaded box that takes longer than the repair's default 5 s quiet time, and the sweep would "repair" (dispatch)
      // them, adding a `repair` audit row each. The sweep still runs; it only waits as long as the step timeout.
      strandedRepair: { intervalMs: 10_000, quietMs: STEP_TIMEOUT_MS },
      ...(options.limits ? { releases: heldStepReleases(runtime.limits, runtime.stores.heldSteps) } : {}),
    });
    void coordinator.start();
    closers.push(() => coordinator.close());
    return coordinator;
  };

  const startHarness = async (options: { concurrency: number; handler?: Handler; consumer?: string }): Promise<Harness> => {
    const redis = new Redis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: null });
    await redis.connect();
    const bus: Bus = createRedisBus({ redis, keyPrefix: config.bus.keyPrefix, maxPayloadBytes: config.bus.maxPayloadBytes, maxDeliveries: config.bus.maxDeliveries, ownsConnection: true });
    const harness = createHarness({
      bus,
      role: "echo",
      handler: options.handler ?? noopHandler,
      signer: new BusAuth({ ...config.busAuth, maxPayloadBytes: config.bus.maxPayloadBytes }).signer("role:echo"),
      concurrency: options.concurrency,
      maxPayloadBytes: config.bus.maxPayloadBytes,
      reclaimIdleMs: config.bus.reclaimIdleMs,
      heartbeatMs: config.harness.heartbeatMs,
      shutdownGraceMs: 2_000,
      blockMs: config.bus.blockMs,
      ...(options.consumer ? { consumer: options.consumer } : {}),
    });
    void harness.start();
    closers.push(async () => {
      await harness.close();
      await bus.close();
    });
    return harness;
  };

  const startHarnessProcessFn = async (options: { concurrency: number }): Promise<HarnessProcess> => {
    const child = await startHarnessProcess({
      redisUrl: config.redisUrl,
      keyPrefix: config.bus.keyPrefix,
      role: "echo",
      concurrency: options.concurrency,
      maxPayloadBytes: config.bus.maxPayloadBytes,
      maxDeliveries: config.bus.maxDeliveries,
      reclaimIdleMs: config.bus.reclaimIdleMs,
      heartbeatMs: config.harness.heartbeatMs,
      blockMs: config.bus.blockMs,
    });
    let stopped: ReturnType<HarnessProcess["stop"]> | undefined;
    const stop = (): ReturnType<HarnessProcess["stop"]> => (stopped ??= child.stop());
    closers.push(stop);
    return { pid: child.pid, cpuMs: () => child.cpuMs(), stop };
  };

  const inboxKey = streamKey(config.bus.keyPrefix, "coordinator");
  const inboxProgress = async (): Promise<{ read: number; pending: number; acked: number }> => {
    const groups = (await runtime.redis.call("XINFO", "GROUPS", inboxKey).catch(() => [])) as unknown[][];
    for (const group of groups) {
      const fields = new Map<string, unknown>();
      for (let i = 0; i + 1 < group.length; i += 2) fields.set(String(group[i]), group[i + 1]);
      if (fields.get("name") !== COORDINATOR_GROUP) continue;
      const read = Number(fields.get("entries-read") ?? 0);
      const pending = Number(fields.get("pending") ?? 0);
      return { read, pending, acked: read - pending };
    }
    return { read: 0, pending: 0, acked: 0 };
  };

  const cpuSources: CpuSources = {
    redisInfo: () => runtime.redis.info("cpu"),
    postgresPids: async () =>
      (await runtime.pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")).rows.map((r) => r.pid),
  };

  return { config, db, runtime, engine, publisher, workflow, createTasks, startTasks, startTasksThroughOwner, startCoordinator, startHarness, startHarnessProcess: startHarnessProcessFn, cpuSources, inboxProgress, close };
}

/** Resolves true once `done()` holds (polled every `intervalMs`), false when `signal` aborts first. */
export async function pollUntil(done: () => boolean | Promise<boolean>, signal: AbortSignal, intervalMs = 2): Promise<boolean> {
  while (!signal.aborted) {
    if (await done()) return true;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return false;
}

/** Counts of what a round left in Postgres: every task should be completed and the chain intact. */
/** Audit rows of these tasks by `action:verdict (rule)`, for a round whose row count is off. */
export async function auditBreakdown(system: BenchSystem, taskIds: readonly string[]): Promise<string> {
  const { rows } = await system.runtime.pool.query<{ kind: string; n: number }>(
    "SELECT action || ':' || verdict || ' (' || rule || ')' AS kind, count(*)::int AS n FROM audit_log WHERE org_id = $1 AND task_id = ANY($2::text[]) GROUP BY 1 ORDER BY 2 DESC",
    [BENCH_ORG, taskIds],
  );
  return rows.map((r) => `${r.kind} ${r.n}`).join(", ");
}

export async function taskOutcome(system: BenchSystem, taskIds: readonly string[]): Promise<{ completed: number; other: number; auditRows: number; timeouts: number }> {
  const { rows } = await system.runtime.pool.query<{ completed: number; other: number }>(
    "SELECT count(*) FILTER (WHERE status = 'completed')::int AS completed, count(*) FILTER (WHERE status <> 'completed')::int AS other FROM tasks WHERE id = ANY($1::uuid[])",
    [taskIds],
  );
  const audit = await system.runtime.pool.query<{ rows: number; timeouts: number }>(
    "SELECT count(*)::int AS rows, count(*) FILTER (WHERE action = 'timeout')::int AS timeouts FROM audit_log WHERE org_id = $1 AND task_id = ANY($2::text[])",
    [BENCH_ORG, taskIds],
  );
  return { completed: rows[0]!.completed, other: rows[0]!.other, auditRows: audit.rows[0]!.rows, timeouts: audit.rows[0]!.timeouts };
}
