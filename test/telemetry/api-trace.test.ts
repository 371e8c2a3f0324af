/**
 * The gateway's API span: one per call, a child of the caller's `traceparent` header, naming the method, the tenant
 * and the Connect status; a task started by the call opens its trace under it, and the start envelope (through the
 * shard owner) carries that trace to the coordinator's first hop.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTraceparent } from "../../src/telemetry/traceparent.js";
import { waitForTask } from "../support/wait.js";
import { createGatewayFixture, postJson, type GatewayFixture } from "../gateway/fixture.js";
import { createTestTracing, describeSpans, parentOf, type TestTracing } from "./support.js";

const CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("API spans", () => {
  let tracing: TestTracing;
  let fx: GatewayFixture;
  let key: string;
  beforeAll(async () => {
    tracing = createTestTracing();
    fx = await createGatewayFixture();
    key = await fx.tenant("acme");
    await fx.submit("acme", "name: noop\nsteps:\n  - { id: a, to: \"role:nobody\" }\n");
    fx.rt.startCoordinator();
  });
  afterAll(async () => {
    await fx.cleanup();
    await tracing.close();
  });

  it("records the call under the caller's trace, and the task's trace continues it", async () => {
    tracing.on();
    tracing.exporter.reset();
    const res = await postJson(fx.url, "switchyard.api.v1.TaskService/Start", { workflow: "noop" }, key, { traceparent: CALLER });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const taskId = res.body.task.id as string;
    // The owner's first hop dispatches `a` (nobody serves role:nobody: the task stays running, that is enough).
    await waitForTask(fx.rt.tasks, "acme", taskId, { until: (view) => view.steps[0]!.status === "dispatched" });
    const spans = tracing.spans();
    const picture = describeSpans(spans);
    const api = spans.find((s) => s.name === "switchyard.api switchyard.api.v1.TaskService/Start");
    expect(api, picture).toBeDefined();
    expect(api!.spanContext().traceId).toBe(parseTraceparent(CALLER)!.traceId);
    expect(parentOf(api!)).toBe(parseTraceparent(CALLER)!.spanId);
    expect(api!.attributes).toMatchObject({ "rpc.method": "Start", "switchyard.tenant": "acme", "rpc.connect_rpc.status_code": "ok" });
    const start = spans.find((s) => s.name === "switchyard.task.start" && s.attributes["switchyard.task"] === taskId);
    expect(start && parentOf(start), picture).toBe(api!.spanContext().spanId);
    const { rows } = await fx.rt.pool.query("SELECT traceparent FROM tasks WHERE id = $1", [taskId]);
    expect(parseTraceparent(rows[0].traceparent)?.spanId).toBe(start!.spanContext().spanId);
    const hop = await settledHop(tracing, taskId);
    expect(parentOf(hop), picture).toBe(start!.spanContext().spanId);
    // Applied by the shard owner's coordinator in its own transaction: governor, audit, then the commit.
    expect(hop.events.map((e) => e.name)).toEqual(["governor", "audit", "commit"]);
  });

  it("records a refused call with its Connect code", async () => {
    tracing.on();
    tracing.exporter.reset();
    const res = await postJson(fx.url, "switchyard.api.v1.TaskService/Start", { workflow: "missing" }, key);
    expect(res.status).toBe(404);
    const api = tracing.spans().find((s) => s.name === "switchyard.api switchyard.api.v1.TaskService/Start");
    expect(api?.attributes, describeSpans(tracing.spans())).toMatchObject({ "switchyard.tenant": "acme", "rpc.connect_rpc.status_code": "not_found" });
    expect(api!.status.code).toBe(2);
  });

  it("records nothing when tracing is off", async () => {
    tracing.off();
    tracing.exporter.reset();
    const res = await postJson(fx.url, "switchyard.api.v1.TaskService/Start", { workflow: "noop" }, key, { traceparent: CALLER });
    expect(res.status).toBe(200);
    const { rows } = await fx.rt.pool.query("SELECT traceparent FROM tasks WHERE id = $1", [res.body.task.id]);
    expect(rows[0].traceparent).toBeNull();
    expect(describeSpans(tracing.spans())).toBe("");
  });
});

/** The owner's task_started hop span, once it ended (it ends after its commit, asynchronously to the API call). */
async function settledHop(tracing: TestTracing, taskId: string) {
  for (let i = 0; i < 100; i++) {
    const hop = tracing.spans().find((s) => s.name === "switchyard.hop task_started" && s.attributes["switchyard.task"] === taskId);
    if (hop) return hop;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no task_started hop span for ${taskId}:\n${describeSpans(tracing.spans())}`);
}
