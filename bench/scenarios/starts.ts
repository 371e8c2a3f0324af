/**
 * (f) `starts_per_s`, `start_p50_ms`, `start_p99_ms`: task starts through the real gateway (issue 11 §2).
 *
 * Set-up (untimed): a tenant with an API key and a one-step workflow, the gateway (`startGateway`, starts through
 * the shard owner) in this process, a coordinator (`createCoordinator`, as `start coordinator` runs it) in its own.
 *
 * Timed: pre-serialised Connect `StartTask` calls (JSON over HTTP/1.1, `Authorization: Bearer`) from `CONNECTIONS`
 * keep-alive connections, one call at a time each (raw sockets: push-client.ts, so the load costs the box little).
 * Each answer comes after its batch committed (tasks, steps, start envelopes in the outbox) and the envelopes were
 * published to the tenant's shard inbox. `starts_per_s` = answered starts / the window from the first call to
 * the last answer; latencies are per call, write to answer.
 *
 * Beside the figures: CPU per start of this process (gateway and clients) and of the coordinator over the window.
 *
 * Afterwards (untimed, checked): every started task got its first dispatch from the coordinator, exactly once
 * (one `dispatch` audit row per task).
 */
import { performance } from "node:perf_hooks";
import { startGateway } from "../../src/gateway/server.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { createRuntime } from "../../src/runtime.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { createTenantWithKey } from "../../src/tenancy/bootstrap.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { perSecond, scenarioConfig, summarize, type Scenario } from "../support.js";
import { startCoordinatorProcess } from "./coordinator-child.js";
import { sendAll } from "./push-client.js";

const SIZES = { full: { warmup: 1_000, starts: 12_000 }, quick: { warmup: 300, starts: 3_000 } };
/** Clients calling at once, each on its own keep-alive connection. */
const CONNECTIONS = 96;
const ORG = "bench-starts";
const PATH = "/switchyard.api.v1.TaskService/Start";
/** The dispatch check gives up once the dispatched count has not moved for this long (ms). */
const DRAIN_STALL_MS = 30_000;

/** Polls `read` until `done`, or until its answer has not changed for `stallMs`; resolves with the last answer. */
async function untilStill<T>(read: () => Promise<T>, done: (value: T) => boolean, stallMs: number): Promise<T> {
  let last = await read();
  let movedAt = performance.now();
  while (!done(last) && performance.now() - movedAt < stallMs) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = await read();
    if (JSON.stringify(now) !== JSON.stringify(last)) movedAt = performance.now();
    last = now;
  }
  return last;
}

function startCall(token: string, host: string, n: number): Buffer {
  const body = Buffer.from(JSON.stringify({ workflow: "one", input: { n, note: "a bench start" } }));
  const head = `POST ${PATH} HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\nauthorization: Bearer ${token}\r\ncontent-length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), body]);
}

export const startsScenario: Scenario = {
  name: "starts",
  description: `(f) task starts/s through the gateway (Connect StartTask, ${CONNECTIONS} connections), first dispatch by a coordinator process`,
  budgetMs: { full: 180_000, quick: 90_000 },
  async run(ctx) {
    const sizes = SIZES[ctx.quick ? "quick" : "full"];
    const db = await ctx.createScratchDatabase();
    const config = scenarioConfig(ctx, db.url, (c) => ({ bus: { ...c.bus, blockMs: 100 } }));
    const runtime = await createRuntime(config, { poolSize: 20 });
    ctx.defer(() => runtime.close());
    const { apiKey } = await createTenantWithKey(runtime.stores, runtime.pool, { orgId: ORG, name: ORG });
    await submitWorkflow(runtime.pool, ORG, parseWorkflowDefinition('name: one\nsteps:\n  - { id: a, to: "role:bench", timeout: 10m }\n'));
    const gateway = await startGateway(runtime, { port: 0, host: "127.0.0.1", collectMetrics: false, approvalLinks: false, shutdownGraceMs: 1_000 });
    ctx.defer(() => gateway.close());
    const coordinator = await ctx.phase("start the coordinator process", () => startCoordinatorProcess(config));
    ctx.defer(() => coordinator.stop());

    const host = `127.0.0.1:${gateway.port}`;
    const calls = (from: number, n: number) => Array.from({ length: n }, (_, i) => startCall(apiKey.secret, host, from + i));
    const warmup = calls(0, sizes.warmup);
    const timed = calls(sizes.warmup, sizes.starts);

    await ctx.phase("warm-up", () => sendAll(gateway.port, warmup, CONNECTIONS, ctx.signal));
    const cpuBefore = process.cpuUsage();
    const coordinatorBefore = await coordinator.sample();
    const began = performance.now();
    const result = await ctx.phase(`${sizes.starts.toLocaleString("en-US")} starts`, () => sendAll(gateway.port, timed, CONNECTIONS, ctx.signal));
    const ms = performance.now() - began;
    const cpu = process.cpuUsage(cpuBefore);
    const coordinatorCpuMs = (await coordinator.sample()).cpuMs - coordinatorBefore.cpuMs;
    const answered = result.outcomes.get("http_200") ?? 0;
    ctx.log(`outcomes: ${JSON.stringify(Object.fromEntries(result.outcomes))}`);
    if (answered !== result.sent) throw new SwitchyardError(ErrorCode.Internal, `${result.sent - answered} of ${result.sent} starts were not answered 200`);

    // Every task started (warm-up included) gets its first dispatch, once.
    const expected = sizes.warmup + answered;
    const dispatched = async () =>
      (
        await runtime.pool.query<{ tasks: number; rows: number }>(
          "SELECT count(DISTINCT task_id)::int AS tasks, count(*)::int AS rows FROM audit_log WHERE org_id = $1 AND action = 'dispatch'",
          [ORG],
        )
      ).rows[0]!;
    // Not bound to the scenario's budget: once the starts are answered, their dispatch is checked however long the
    // coordinator takes, as long as it keeps moving.
    const drainBegan = performance.now();
    const final = await ctx.phase("coordinator applies every start", () => untilStill(dispatched, (d) => d.tasks >= expected, DRAIN_STALL_MS));
    const drainMs = performance.now() - drainBegan;
    if (final.tasks !== expected || final.rows !== expected) {
      throw new SwitchyardError(ErrorCode.Internal, `${final.tasks} of ${expected} started tasks dispatched, ${final.rows} dispatch rows`);
    }
    const latency = summarize(result.latenciesMs);
    const extra = {
      starts: answered,
      partial: result.sent < timed.length,
      connections: CONNECTIONS,
      windowMs: Math.round(ms),
      dispatchDrainMs: Math.round(drainMs),
      shards: config.shards.count,
      // CPU per start over the window: this process (gateway and the raw-socket clients) and the coordinator's.
      gatewayCpuUsPerStart: Math.round((cpu.user + cpu.system) / Math.max(1, answered)),
      coordinatorCpuUsPerStart: Math.round((coordinatorCpuMs * 1000) / Math.max(1, answered)),
    };
    return [
      { name: "starts_per_s", value: perSecond(answered, ms), unit: "starts/s", extra },
      { name: "start_p50_ms", value: latency.p50, unit: "ms", extra: { mean: latency.mean, p90: latency.p90, max: latency.max } },
      { name: "start_p99_ms", value: latency.p99, unit: "ms" },
    ];
  },
};
