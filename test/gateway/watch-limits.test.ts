/**
 * Watch streams are bounded and cheap while idle: at most `watchMaxPerTenant` per tenant and `watchMaxStreams` per
 * gateway (one more is RESOURCE_EXHAUSTED, and a slot is free again once its stream ends), and idle streams share
 * one poller, so many of them neither hold pool connections nor queue another tenant's calls.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { loadConfig } from "../../src/config/index.js";
import { TaskService } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../../src/gen/switchyard/api/v1/workflows_pb.js";
import { WatchHub } from "../../src/gateway/watch-hub.js";
import { silentLogger } from "../../src/logger.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime } from "../support/runtime.js";
import { waitForProgress } from "../support/wait.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";

/** Nothing serves role:nobody, so its tasks stay running and their streams stay open and idle. */
const STUCK = "name: stuck\nsteps:\n  - { id: a, to: 'role:nobody' }\n";

interface OpenWatch {
  /** Ends the stream from the client's side. */
  abort(): void;
  /** Settles when the stream has ended (normally or not). */
  ended: Promise<void>;
}

/** Opens a Watch and waits for its first message (the task as it is now), so the stream is known to be open. */
async function openWatch(tasks: Client<typeof TaskService>, id: string): Promise<OpenWatch> {
  const controller = new AbortController();
  const stream = tasks.watch({ id }, { signal: controller.signal })[Symbol.asyncIterator]();
  const first = await stream.next();
  expect(first.done).toBe(false);
  const ended = (async () => {
    try {
      while (!(await stream.next()).done);
    } catch {
      // aborted by the test
    }
  })();
  return { abort: () => controller.abort(), ended };
}

async function refusal(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("the Watch was not refused");
}

async function startStuck(fx: GatewayFixture, key: string, n: number): Promise<string[]> {
  await fx.client(WorkflowService, key).submit({ source: STUCK });
  const tasks = fx.client(TaskService, key);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await tasks.start({ workflow: "stuck" })).task!.id);
  return ids;
}

/** Waits until the gateway counts `total` open streams (a stream's slot is released on the server after it ends). */
async function untilOpen(fx: GatewayFixture, total: number): Promise<void> {
  await waitForProgress({
    what: `${total} open Watch streams`,
    progress: () => fx.gateway.watches.counts.total,
    done: (open) => open === total,
    describeStuck: (open) => `the gateway still counts ${open} open Watch streams`,
    stallMs: 10_000,
  });
}

describe("Watch stream limits", () => {
  let fx: GatewayFixture | undefined;
  const watches: OpenWatch[] = [];
  afterEach(async () => {
    for (const watch of watches.splice(0)) watch.abort();
    await fx?.cleanup();
    fx = undefined;
  });

  it("refuses one stream more than the tenant's and the gateway's limits, and frees a slot when a stream ends", async () => {
    fx = await createGatewayFixture({ watchMaxPerTenant: 2, watchMaxStreams: 3 });
    const keyA = await fx.tenant("tenant-a");
    const keyB = await fx.tenant("tenant-b");
    const tasksA = fx.client(TaskService, keyA);
    const tasksB = fx.client(TaskService, keyB);
    const idsA = await startStuck(fx, keyA, 3);
    const idsB = await startStuck(fx, keyB, 2);

    watches.push(await openWatch(tasksA, idsA[0]!), await openWatch(tasksA, idsA[1]!));
    const perTenant = await refusal(openWatch(tasksA, idsA[2]!));
    expect(perTenant.code).toBe(Code.ResourceExhausted);
    expect(perTenant.rawMessage).toMatch(/^tenant tenant-a already has 2 Watch streams open, the most allowed per tenant \(SWITCHYARD_WATCH_MAX_PER_TENANT\)/);

    // Tenant B is not limited by A's streams, only by the gateway's total.
    watches.push(await openWatch(tasksB, idsB[0]!));
    const total = await refusal(openWatch(tasksB, idsB[1]!));
    expect(total.code).toBe(Code.ResourceExhausted);
    expect(total.rawMessage).toMatch(/^this gateway already serves 3 Watch streams, the most it allows \(SWITCHYARD_WATCH_MAX_STREAMS\)/);
    expect(fx.gateway.watches.counts).toEqual({ total: 3, byTenant: new Map([["tenant-a", 2], ["tenant-b", 1]]) });

    // A client that goes away frees its slot…
    watches[0]!.abort();
    await untilOpen(fx, 2);
    watches.push(await openWatch(tasksB, idsB[1]!));
    // …and so does a stream that ends because its task finished.
    await tasksA.cancel({ id: idsA[1]!, reason: "done watching" });
    await watches[1]!.ended;
    await untilOpen(fx, 2);
    watches.push(await openWatch(tasksA, idsA[2]!));
    expect(fx.gateway.watches.counts.byTenant.get("tenant-a")).toBe(1);
  });

  it("many idle streams share one poller: they hold no connection, and another tenant's List answers with a pool smaller than their number", async () => {
    const WATCHERS = 24;
    const POOL = 3;
    fx = await createGatewayFixture({ watchIntervalMs: 50, watchMaxPerTenant: 64 }, { poolSize: POOL });
    const keyA = await fx.tenant("busy");
    const keyB = await fx.tenant("quiet");
    const ids = await startStuck(fx, keyA, WATCHERS);
    await fx.client(WorkflowService, keyB).submit({ source: STUCK });
    await fx.client(TaskService, keyB).start({ workflow: "stuck" });

    const tasksA = fx.client(TaskService, keyA);
    for (const id of ids) watches.push(await openWatch(tasksA, id));
    expect(fx.gateway.watches.counts.total).toBe(WATCHERS);

    // Every checkout of a pool connection while the streams sit idle for ~10 poll intervals. Streams polling on
    // their own would check one out each per interval (some 240 here); the shared poller checks out one per interval.
    let checkouts = 0;
    const counted = () => void checkouts++;
    fx.rt.pool.on("acquire", counted);
    await new Promise((r) => setTimeout(r, 500));
    fx.rt.pool.off("acquire", counted);
    expect(checkouts).toBeLessThan(WATCHERS);

    // Another tenant's List is answered while all the streams stay open, through a pool of POOL < WATCHERS.
    const list = await fx.client(TaskService, keyB).list({});
    expect(list.tasks).toHaveLength(1);
    expect(fx.rt.pool.totalCount).toBeLessThanOrEqual(POOL);
    expect(fx.gateway.watches.counts.total).toBe(WATCHERS);
  });
});

describe("WatchHub", () => {
  it("wakes a stream when its task changes, and one malformed task id does not stop the shared poll", async () => {
    const rt = await createTestRuntime();
    try {
      await submitWorkflow(rt.pool, "acme", parseWorkflowDefinition(STUCK));
      const { taskId } = await rt.tasks.start({ orgId: "acme", workflow: "stuck" });
      const hub = new WatchHub({ db: rt.pool, reads: rt.stores.taskReads, intervalMs: 20, limits: { perTenant: 10, total: 10 }, logger: silentLogger });
      const never = new AbortController().signal;
      const bad = hub.open("acme", "not-a-uuid");
      const good = hub.open("acme", taskId);
      // The first poll that sees the task wakes its stream (it might have changed since the stream's first read).
      await good.changed(never);
      let woken = false;
      const next = good.changed(never).then(() => (woken = true));
      await new Promise((r) => setTimeout(r, 100));
      expect(woken).toBe(false);
      await rt.tasks.cancel("acme", taskId, "test", "changed");
      await next;
      expect(woken).toBe(true);
      bad.release();
      good.release();
      expect(hub.counts.total).toBe(0);
      hub.close();
    } finally {
      await rt.cleanup();
    }
  });
});

describe("Watch limits configuration", () => {
  it("defaults to 32 streams per tenant and 512 per gateway; the environment changes them; 0 is refused", () => {
    expect(loadConfig({}).gateway).toMatchObject({ watchMaxPerTenant: 32, watchMaxStreams: 512 });
    expect(loadConfig({ SWITCHYARD_WATCH_MAX_PER_TENANT: "4", SWITCHYARD_WATCH_MAX_STREAMS: "100" }).gateway).toMatchObject({ watchMaxPerTenant: 4, watchMaxStreams: 100 });
    expect(() => loadConfig({ SWITCHYARD_WATCH_MAX_PER_TENANT: "0" })).toThrow(/SWITCHYARD_WATCH_MAX_PER_TENANT must be an integer >= 1/);
  });
});
