/**
 * The plain HTTP side of the gateway: /healthz, /readyz (503 naming what is down), /metrics, body size limits,
 * and a graceful shutdown that lets an in-flight call finish.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { Redis } from "ioredis";
import { WorkflowService } from "../../src/gen/switchyard/api/v1/workflows_pb.js";
import { startGateway } from "../../src/gateway/server.js";
import { createGatewayFixture, postJson, type GatewayFixture } from "./fixture.js";

/** A port nothing listens on: bind one, then close it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("gateway HTTP routes", () => {
  let fx: GatewayFixture;
  let key: string;
  beforeAll(async () => {
    fx = await createGatewayFixture({ readMaxBytes: 64 * 1024 });
    key = await fx.tenant("acme");
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it("/healthz answers while the process is up", async () => {
    const res = await fetch(`${fx.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok" });
  });

  it("/readyz is 200 when Redis, Postgres and the schema are fine", async () => {
    const res = await fetch(`${fx.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ready: true, checks: { redis: "ok", postgres: "ok", schema: "ok" } });
  });

  it("/readyz is 503 naming Redis when Redis is unreachable", async () => {
    const deadRedis = new Redis(`redis://127.0.0.1:${await closedPort()}`, { lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: () => 200 });
    deadRedis.on("error", () => {});
    deadRedis.connect().catch(() => {});
    const gateway = await startGateway({ ...fx.rt, redis: deadRedis }, { port: 0, host: "127.0.0.1", readinessTimeoutMs: 500, collectMetrics: false });
    try {
      const res = await fetch(`${gateway.url}/readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { ready: boolean; checks: Record<string, string> };
      expect(body.ready).toBe(false);
      expect(body.checks.redis).toMatch(/Redis/);
      expect(body.checks.postgres).toBe("ok");
      // Liveness does not depend on Redis.
      expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    } finally {
      await gateway.close();
      deadRedis.disconnect();
    }
  });

  it("/metrics serves the Prometheus text format with the API and scrape-time metrics", async () => {
    await fx.client(WorkflowService, key).list({});
    const res = await fetch(`${fx.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toMatch(/switchyard_api_requests_total\{service="WorkflowService",method="List",code="ok"\} [1-9]/);
    expect(text).toContain("# TYPE switchyard_hops_total counter");
    expect(text).toContain("switchyard_approvals_pending");
  });

  it("an oversize request body is refused with RESOURCE_EXHAUSTED before any work", async () => {
    const big = { workflow: "x", input: { blob: "x".repeat(100 * 1024) } };
    const raw = await postJson(fx.url, "switchyard.api.v1.TaskService/Start", big, key);
    expect(raw.status).toBe(429);
    expect(raw.body.code).toBe("resource_exhausted");
    const error = await fx
      .client(WorkflowService, key)
      .submit({ source: `name: big\ndescription: ${"y".repeat(100 * 1024)}\nsteps: []\n` })
      .catch((e: unknown) => ConnectError.from(e));
    expect((error as ConnectError).code).toBe(Code.ResourceExhausted);
  });

  it("malformed JSON and unknown routes get a clear error", async () => {
    const raw = await postJson(fx.url, "switchyard.api.v1.TaskService/Get", "{not json", key);
    expect(raw.status).toBe(400);
    expect(raw.body.code).toBe("invalid_argument");
    expect((await fetch(`${fx.url}/nope`)).status).toBe(404);
    const badEnum = await postJson(fx.url, "switchyard.api.v1.TaskService/List", { statuses: ["TASK_STATUS_BOGUS"] }, key);
    expect(badEnum.status).toBe(400);
    expect(badEnum.body.message).toContain("TASK_STATUS_BOGUS");
    // A misspelt field is refused rather than ignored (it would silently drop the idempotency key).
    const typo = await postJson(fx.url, "switchyard.api.v1.TaskService/Start", { workflow: "x", idempotencyKy: "k" }, key);
    expect(typo.status).toBe(400);
    expect(typo.body.message).toContain("idempotencyKy");
  });

  it("a task id that is not a UUID is NOT_FOUND, not an internal error", async () => {
    const raw = await postJson(fx.url, "switchyard.api.v1.TaskService/Get", { id: "'; DROP TABLE tasks; --" }, key);
    expect(raw.status).toBe(404);
    expect(raw.body.code).toBe("not_found");
  });
});

describe("gateway shutdown", () => {
  it("finishes an in-flight call, then refuses new connections", async () => {
    const fx = await createGatewayFixture();
    try {
      const key = await fx.tenant("acme");
      const client = fx.client(WorkflowService, key);
      // Hold the database briefly so the call is in flight while close() starts.
      const blocker = await fx.rt.pool.connect();
      await blocker.query("BEGIN");
      await blocker.query("LOCK TABLE workflows IN ACCESS EXCLUSIVE MODE");
      const inFlight = client.submit({ source: "name: late\nsteps:\n  - { id: a, to: 'role:echo' }\n" });
      await new Promise((r) => setTimeout(r, 200));
      const closing = fx.gateway.close();
      await new Promise((r) => setTimeout(r, 100));
      await blocker.query("COMMIT");
      blocker.release();
      expect(await inFlight).toMatchObject({ ref: "late@1", created: true });
      await closing;
      await expect(fetch(`${fx.url}/healthz`)).rejects.toThrow();
    } finally {
      await fx.cleanup();
    }
  });
});
