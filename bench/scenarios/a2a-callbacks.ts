/**
 * `callbacks_per_s`: A2A push callbacks per second through the full verify → correlate → resume path.
 *
 * Set-up (untimed): N tasks of a one-step workflow (`foreign:helper`) are created in bulk and started through the
 * real engine (the A2A dispatcher writes each `a2a_bridge` row and its `a2a_egress` audit row); the sender never
 * runs (no coordinator runs its job), so the bench then marks every bridge `dispatched` with a foreign task id, as a
 * successful send would. The URL token and notification secret of each bridge are signed beforehand, as the agent
 * got them.
 *
 * Timed: the terminal v1.0 `task` (completed, one artifact) of every bridge is POSTed to the real `handleA2ACallback`
 * on a local HTTP server (the gateway's part: verify, correlate, resolve the bridge and queue its RESULT), from
 * `CONCURRENCY` keep-alive connections in this process; a coordinator in its own process (coordinator-child.ts)
 * applies the RESULTs (audited, step and task completed). The clock stops when the last step is completed, not at
 * the last answer. The callback rate limit is raised for the bench (the default, 200/s per tenant, is a policy cap).
 */
import { GATEWAY_SENDER } from "../../src/bus/auth/bus-keys.js";
import { createHmac, createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { randomUUID } from "node:crypto";
import type { StepRecord } from "../../src/core/model.js";
import { saveSteps } from "../../src/store/engine/postgres-task-store.js";
import { getLinkKey } from "../../src/store/approvals/postgres-link-key-store.js";
import type { LinkKey } from "../../src/store/approvals/approval-store.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { parsePushNotification } from "../../src/foreign/a2a/push-body.js";
import { CallbackIntake } from "../../src/foreign/callback-intake.js";
import { handleA2ACallback, type A2ACallbackDeps } from "../../src/foreign/callback-route.js";
import { notificationSecret, signCallbackToken } from "../../src/foreign/callback-token.js";
import { registerForeignAgent } from "../../src/foreign/registry.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import type { Pool } from "../../src/store/db.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { perSecond, scenarioConfig, type Measurement, type Scenario, type ScenarioContext } from "../support.js";
import { startCoordinatorProcess, type CoordinatorProcess } from "./coordinator-child.js";
import { sendAll, serialisePush } from "./push-client.js";
import { Tally, cpuPerUnit, sampleCpu, statementName, type CpuSources } from "./probe.js";

const SIZES = { full: { warmup: 1_000, callbacks: 4_000 }, quick: { warmup: 200, callbacks: 1_000 } };
/** Keep-alive connections pushing at once: a fleet of agents, each waiting for its answer before its next push. */
const CONCURRENCY = 128;
/** Tenants the tasks are spread over; every resume of one tenant queues on its audit-chain head. */
const TENANTS = ["bench-a2a"];
const AGENT = "helper";
const START_BATCH = 200;

interface Push {
  taskId: string;
  path: string;
  token: string;
  body: string;
}

async function setUp(ctx: ScenarioContext, runtime: Runtime, count: number, label: string): Promise<Push[]> {
  const pool = runtime.pool;
  const perTenant = new Map<string, string[]>();
  const ids = Array.from({ length: count }, (_, i) => {
    const id = randomUUID();
    const org = TENANTS[i % TENANTS.length]!;
    const list = perTenant.get(org) ?? [];
    if (list.length === 0) perTenant.set(org, list);
    list.push(id);
    return { id, org };
  });
  await ctx.phase(`${label}: create + start ${count} foreign tasks (engine)`, async () => {
    for (const [org, taskIds] of perTenant) {
      await pool.query(
        `INSERT INTO tasks (id, org_id, workflow_name, workflow_version, input, status, budget, cost)
         SELECT id, $2, 'bench-foreign', 1, '{}'::jsonb, 'running', NULL, 0 FROM unnest($1::uuid[]) AS id`,
        [taskIds, org],
      );
      await saveSteps(pool, taskIds.map((taskId) => pendingStep(taskId, org)));
    }
    await pool.query("ANALYZE tasks, steps");
    for (let i = 0; i < ids.length; i += START_BATCH) {
      const inputs = ids.slice(i, i + START_BATCH).map(({ id, org }) => ({ orgId: org, taskId: id, event: { type: "task_started" as const, eventId: `start:${id}` } }));
      await runtime.engine.apply(pool, inputs);
    }
    // What a successful send records (sender.ts); the sender itself never runs here.
    const { rowCount } = await pool.query(
      `UPDATE a2a_bridge SET status = 'dispatched', foreign_task_id = 'ft-' || id, last_state = 'submitted', dialect = '1.0',
         deadline_ms = $2, updated_at = now() WHERE status = 'pending_send' AND task_id = ANY($1::uuid[])`,
      [ids.map((t) => t.id), Date.now() + 600_000],
    );
    if (rowCount !== count) throw new SwitchyardError(ErrorCode.Internal, `expected ${count} bridges to open, found ${rowCount}`);
    await pool.query("ANALYZE a2a_bridge");
  });
  return ctx.phase(`${label}: sign ${count} callback URLs`, async () => {
    const { rows } = await pool.query<{ id: string; org_id: string; task_id: string; token_kid: string; foreign_task_id: string }>(
      "SELECT id, org_id, task_id, token_kid, foreign_task_id FROM a2a_bridge WHERE status = 'dispatched' AND task_id = ANY($1::uuid[])",
      [ids.map((t) => t.id)],
    );
    const keys = new Map<string, LinkKey>();
    const pushes: Push[] = [];
    for (const row of rows) {
      const keyId = `${row.org_id}\u0000${row.token_kid}`;
      if (!keys.has(keyId)) keys.set(keyId, (await getLinkKey(pool, row.org_id, row.token_kid))!);
      const key = keys.get(keyId)!;
      const t = signCallbackToken(key, { bridgeId: row.id, orgId: row.org_id, expiresAtMs: Date.now() + 3_600_000 });
      pushes.push({
        taskId: row.task_id,
        path: `/api/v1/a2a/callback/${row.id}?t=${t}`,
        token: notificationSecret(key, row.id),
        // The whole terminal Task with its artifacts: a bare "completed" status push is confirmed with GetTask first
        // (pushes cross), and this bench's agent does not exist.
        body: JSON.stringify({
          task: { id: row.foreign_task_id, contextId: "ctx", status: { state: "TASK_STATE_COMPLETED" }, artifacts: [{ artifactId: "answer", parts: [{ text: "ok" }] }] },
        }),
      });
    }
    return pushes;
  });
}

function pendingStep(taskId: string, orgId: string): StepRecord {
  return {
    taskId, stepId: "ask", orgId, kind: "workflow", status: "pending", destination: `foreign:${AGENT}`, attempt: 0, depth: 0, clearance: 0,
    dueAtMs: null, cost: 0, output: null, error: null, approvalId: null, delegation: null, checkpoint: null, delegations: 0, turns: 0,
  };
}

/** Sends every push (pre-serialised) from `CONCURRENCY` keep-alive connections; counts the answers by outcome. */
async function fire(port: number, pushes: readonly Push[], signal: AbortSignal): Promise<{ outcomes: Map<string, number>; ms: number; sent: number }> {
  const requests = pushes.map((push) => serialisePush(push, `127.0.0.1:${port}`));
  const started = performance.now();
  const { outcomes, sent } = await sendAll(port, requests, CONCURRENCY, signal);
  return { outcomes, ms: performance.now() - started, sent };
}

/** A pool whose every statement (pool.query and inside transactions) is counted and timed by name. */
function countingPool(pool: Pool, tallies: Map<string, Tally>): Pool {
  const timed = (target: { query: (...a: unknown[]) => unknown }) => (...args: unknown[]) => {
    const name = typeof args[0] === "string" ? statementName(args[0]) : "?";
    const started = performance.now();
    const pending = target.query(...args) as Promise<unknown>;
    const done = () => {
      let tally = tallies.get(name);
      if (!tally) tallies.set(name, (tally = new Tally()));
      tally.add(performance.now() - started);
    };
    pending.then(done, done);
    return pending;
  };
  return new Proxy(pool, {
    get(target, property, receiver) {
      if (property === "query") return timed(target as never);
      if (property === "connect") {
        return async () => {
          const client = await target.connect();
          return new Proxy(client, { get: (c, p, r) => (p === "query" ? timed(c as never) : Reflect.get(c, p, r)) });
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
}

/** µs per call of the CPU-only parts of a callback, measured in isolation. */
function microcosts(push: Push, secret: Buffer): Record<string, number> {
  const iterations = 20_000;
  const time = (fn: () => unknown): number => {
    for (let i = 0; i < 1_000; i++) fn();
    const started = performance.now();
    for (let i = 0; i < iterations; i++) fn();
    return Math.round(((performance.now() - started) * 1000 * 100) / iterations) / 100;
  };
  const payload = new URL(push.path, "http://x").searchParams.get("t")!.split(".")[0]!;
  const body = Buffer.from(push.body);
  return {
    url_token_hmac_us: time(() => createHmac("sha256", secret).update("switchyard/a2a-callback\u0000").update(payload).digest()),
    notification_token_sha256_us: time(() => createHash("sha256").update(push.token).digest("hex")),
    push_body_parse_us: time(() => parsePushNotification("application/a2a+json", body, { maxBytes: 65_536 })),
    url_parse_us: time(() => new URL(push.path, "http://localhost")),
  };
}

/**
 * Waits until every task's step is completed (the coordinator applied their RESULTs). The scratch database holds
 * only this scenario's tasks, so it counts completed steps against the count before the round: a plain count over a
 * few thousand rows, cheap enough to poll without taking Postgres time from the system under test.
 */
async function untilCompleted(pool: Pool, before: number, expected: number, signal: AbortSignal): Promise<number> {
  let completed = 0;
  while (!signal.aborted) {
    completed = (await completedSteps(pool)) - before;
    if (completed >= expected) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return completed;
}

async function completedSteps(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM steps WHERE status = 'completed'");
  return rows[0]!.n;
}

/** Fires the pushes and waits for the coordinator to complete every step; the clock covers both. */
async function fireAndResume(port: number, pool: Pool, pushes: readonly Push[], signal: AbortSignal) {
  const before = await completedSteps(pool);
  const started = performance.now();
  const answered = await fire(port, pushes, signal);
  const answeredMs = performance.now() - started;
  const completed = await untilCompleted(pool, before, pushes.length, signal);
  return { ...answered, answeredMs, completed, ms: performance.now() - started };
}

export const a2aCallbacksScenario: Scenario = {
  name: "a2a-callbacks",
  description: "A2A push callbacks/s: verify URL + notification token → correlate bridge → RESULT → coordinator resumes the step",
  budgetMs: { full: 75_000, quick: 30_000 },
  async run(ctx) {
    const sizes = SIZES[ctx.quick ? "quick" : "full"];
    const db = await ctx.createScratchDatabase();
    const config = scenarioConfig(ctx, db.url, (c) => ({ foreign: { ...c.foreign, callbackRatePerSec: 1_000_000 } }));
    const runtime = await createRuntime(config, { egress: { egressEnabled: () => true }, poolSize: CONCURRENCY });
    ctx.defer(() => runtime.close());
    if (!runtime.a2a) throw new SwitchyardError(ErrorCode.Internal, "the runtime has no A2A adapter");
    const definition = parseWorkflowDefinition(`
name: bench-foreign
steps:
  - { id: ask, to: "foreign:${AGENT}", timeout: 10m }
`);
    for (const org of TENANTS) {
      await registerForeignAgent(runtime.stores.foreignAgents, runtime.pool, org, { agentKey: AGENT, baseUrl: "http://127.0.0.1:9", allowHost: "127.0.0.1:9", skills: ["echo"] });
      await submitWorkflow(runtime.pool, org, definition);
    }
    const coordinator: CoordinatorProcess = await startCoordinatorProcess(config);
    ctx.defer(() => coordinator.stop());

    let deps: A2ACallbackDeps = runtime.a2a.callback;
    const server: Server = createServer((req, res) => {
      void handleA2ACallback(req, res, deps).then((handled) => {
        if (!handled) res.writeHead(404).end();
      });
    });
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    ctx.defer(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const port = (server.address() as AddressInfo).port;
    const cpuSources: CpuSources = {
      redisInfo: () => runtime.redis.info("cpu"),
      postgresPids: async () => (await runtime.pool.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")).rows.map((r) => r.pid),
    };

    // Warm-up: JIT, pool connections; the route's statements counted and timed through an intake of its own
    // (the proxy stays out of the timed round; the coordinator's statements are not counted here).
    const warmPushes = await setUp(ctx, runtime, sizes.warmup, "warm-up");
    const tallies = new Map<string, Tally>();
    deps = { ...runtime.a2a.callback, intake: new CallbackIntake({ pool: countingPool(runtime.pool, tallies), bridges: runtime.stores.bridges, publisher: runtime.publisher, maxPayloadBytes: config.bus.maxPayloadBytes, signer: runtime.busAuth.signer(GATEWAY_SENDER) }) };
    const warm = await ctx.phase("warm-up: fire (route statements counted)", () => fireAndResume(port, runtime.pool, warmPushes, ctx.signal));
    deps = runtime.a2a.callback;
    const warmResumed = warm.outcomes.get("resumed") ?? 0;
    const statements = Object.fromEntries(
      [...tallies.entries()]
        .sort((a, b) => b[1].totalMs - a[1].totalMs)
        .map(([name, t]) => [name, { per_callback: round(t.count / Math.max(1, warmResumed)), mean_ms: round(t.meanMs) }]),
    );
    const statementsPerCallback = round([...tallies.values()].reduce((s, t) => s + t.count, 0) / Math.max(1, warmResumed));

    const pushes = await setUp(ctx, runtime, sizes.callbacks, "run");
    const cpuBefore = await sampleCpu(cpuSources);
    const childBefore = await coordinator.sample();
    const run = await ctx.phase(`run: fire ${pushes.length} terminal pushes, wait for every step`, () => fireAndResume(port, runtime.pool, pushes, ctx.signal));
    const childAfter = await coordinator.sample();
    const cpuAfter = await sampleCpu(cpuSources);
    const resumed = run.outcomes.get("resumed") ?? 0;

    const taskIds = pushes.map((p) => p.taskId);
    const { rows } = await runtime.pool.query<{ steps: number; tasks: number; results: number }>(
      `SELECT (SELECT count(*)::int FROM steps WHERE task_id = ANY($1::uuid[]) AND status = 'completed') AS steps,
              (SELECT count(*)::int FROM tasks WHERE id = ANY($1::uuid[]) AND status = 'completed') AS tasks,
              (SELECT count(*)::int FROM audit_log WHERE task_id = ANY($1::text[]) AND action = 'result' AND actor = 'foreign:${AGENT}') AS results`,
      [taskIds],
    );
    const outcome = rows[0]!;
    if (!ctx.signal.aborted && (resumed !== pushes.length || outcome.steps !== pushes.length || outcome.results !== pushes.length)) {
      throw new SwitchyardError(
        ErrorCode.Internal,
        `expected ${pushes.length} resumes, got ${JSON.stringify(Object.fromEntries(run.outcomes))}, ${outcome.steps} steps completed, ${outcome.results} foreign result rows`,
      );
    }
    const key = (await getLinkKey(runtime.pool, TENANTS[0]!, (await runtime.pool.query<{ kid: string }>("SELECT kid FROM link_keys LIMIT 1")).rows[0]!.kid))!;
    const cpu = cpuPerUnit(cpuBefore, cpuAfter, outcome.steps);
    const measurement: Measurement = {
      name: "callbacks_per_s",
      value: perSecond(outcome.steps, run.ms),
      unit: "callbacks/s",
      extra: {
        callbacks: pushes.length,
        sent: run.sent,
        outcomes: Object.fromEntries(run.outcomes),
        steps_completed: outcome.steps,
        tasks_completed: outcome.tasks,
        result_audit_rows: outcome.results,
        concurrency: CONCURRENCY,
        tenants: TENANTS.length,
        ms: round(run.ms),
        answered_ms: round(run.answeredMs),
        answered_per_s: perSecond(run.sent, run.answeredMs),
        mean_ms_per_callback_at_concurrency: round((run.answeredMs * CONCURRENCY) / Math.max(1, resumed)),
        cpu_per_callback: { ...cpu, coordinator_process_us: round(((childAfter.cpuMs - childBefore.cpuMs) * 1000) / Math.max(1, outcome.steps)) },
        coordinator_batch_mean: round((childAfter.entries - childBefore.entries) / Math.max(1, childAfter.batches - childBefore.batches)),
        route_statements_per_callback: statementsPerCallback,
        route_statements_warmup: statements,
        cpu_only_costs: microcosts(pushes[0] ?? warmPushes[0]!, key.secret),
        partial: ctx.signal.aborted,
      },
    };
    return [measurement];
  },
};

const round = (n: number): number => Math.round(n * 100) / 100;
