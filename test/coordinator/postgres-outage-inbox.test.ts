/**
 * A Postgres outage longer than a few reclaim intervals must not push the inbox's RESULTs into the dead letters.
 * The coordinator reaches Postgres through a TCP proxy the test cuts; workers keep publishing RESULTs meanwhile.
 * The batch that failed is applied again once Postgres answers — nothing else is read or reclaimed until then, so
 * no delivery count climbs — and every task completes with no dead letter.
 */
import { afterEach, describe, expect, it } from "vitest";
import { deadLetterKey, streamKey } from "../../src/bus/keys.js";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { inboxOf } from "../../src/bus/shards.js";
import { createPool, type Pool } from "../../src/store/db.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";
import { waitForProgress, waitForTasks } from "../support/wait.js";
import { Workers } from "../support/workers.js";

const ORG = "acme";
const MAX_DELIVERIES = 2;
const RECLAIM_IDLE_MS = 600;

describe("the inbox through a Postgres outage", () => {
  let rt: TestRuntime | undefined;
  let workers: Workers | undefined;
  let proxy: TcpProxy | undefined;
  let pool: Pool | undefined;

  afterEach(async () => {
    await workers?.stop();
    await proxy?.up().catch(() => {});
    await rt?.cleanup();
    await pool?.end().catch(() => {});
    await proxy?.close();
  });

  it("keeps the failed batch and applies it once Postgres is back, dead-lettering nothing", async () => {
    rt = await createTestRuntime({ bus: { maxDeliveries: MAX_DELIVERIES, reclaimIdleMs: RECLAIM_IDLE_MS } });
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition('name: one\nsteps:\n  - { id: a, to: "role:w", timeout: 10m }\n'));
    const url = new URL(rt.db.url);
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
    url.port = String(proxy.port);
    pool = createPool({ connectionString: url.toString(), max: 4 });
    // The coordinator's pool goes through the proxy; starting tasks and reading state use the direct pool.
    rt.startCoordinator({ pool, reclaimIdleMs: RECLAIM_IDLE_MS, sweepIntervalMs: 100 });

    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    workers = new Workers(rt);
    workers.start("w", async () => {
      await gate;
      return { ok: true };
    });
    const tasks = 12;
    for (let i = 0; i < tasks; i++) await rt.tasks.start({ orgId: ORG, workflow: "one", input: { i } });
    await waitForProgress({
      what: "every step to be dispatched",
      progress: async () => (await rt!.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM steps WHERE status = 'dispatched'")).rows[0]!.n,
      done: (n) => n === tasks,
    });

    await proxy.down();
    release();
    // The RESULTs reach the inbox and the coordinator fails to apply them, for many reclaim intervals.
    await waitForProgress({
      what: "the workers' RESULTs to reach the inbox",
      progress: () => rt!.redis.xlen(streamKey(rt!.prefix, inboxOf(ORG, rt!.config.shards.count))),
      done: (n) => n >= tasks,
    });
    await new Promise((r) => setTimeout(r, RECLAIM_IDLE_MS * 10));
    await proxy.up();

    await waitForTasks(rt.pool, { expected: tasks });
    const { rows } = await rt.pool.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM tasks GROUP BY status");
    expect(rows).toEqual([{ status: "completed", n: tasks }]);
    for (const stream of [COORDINATOR_STREAM, inboxOf(ORG, rt.config.shards.count)]) expect(await rt.redis.xlen(deadLetterKey(rt.prefix, stream))).toBe(0);
  });
});
