import { afterEach, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { loadConfig } from "../../src/config/index.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { startMetricsServer, type MetricsServer } from "../../src/metrics/metrics-server.js";

describe("a standalone process's metrics endpoint", () => {
  let server: MetricsServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("serves the registry on /metrics, answers /healthz, and 404 elsewhere", async () => {
    const metrics = createMetrics(new Registry());
    metrics.hops.inc({ action: "dispatch", verdict: "allow" }, 3);
    server = await startMetricsServer({ registry: metrics.registry, host: "127.0.0.1", port: 0 });
    const response = await fetch(`${server.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain");
    expect(await response.text()).toMatch(/^switchyard_hops_total\{action="dispatch",verdict="allow"\} 3$/m);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.url}/api/anything`)).status).toBe(404);
  });

  it("serves /readyz from the readiness check it is given: 200 when ready, 503 with the report when not", async () => {
    let report: { ready: boolean; checks: Record<string, string> } = { ready: true, checks: { postgres: "ok" } };
    server = await startMetricsServer({ registry: new Registry(), host: "127.0.0.1", port: 0, readiness: async () => report });
    let response = await fetch(`${server.url}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(report);
    report = { ready: false, checks: { postgres: "connect ECONNREFUSED 127.0.0.1:5432" } };
    response = await fetch(`${server.url}/readyz`);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual(report);
  });

  it("has no /readyz without a readiness check", async () => {
    server = await startMetricsServer({ registry: new Registry(), host: "127.0.0.1", port: 0 });
    expect((await fetch(`${server.url}/readyz`)).status).toBe(404);
  });

  it("is off unless SWITCHYARD_METRICS_PORT is set, and refuses a port that is not a number", () => {
    expect(loadConfig({}).metrics).toEqual({ host: "127.0.0.1", port: null });
    expect(loadConfig({ SWITCHYARD_METRICS_PORT: "9464", SWITCHYARD_METRICS_HOST: "0.0.0.0" }).metrics).toEqual({ host: "0.0.0.0", port: 9464 });
    expect(() => loadConfig({ SWITCHYARD_METRICS_PORT: "metrics" })).toThrow(/SWITCHYARD_METRICS_PORT must be an integer/);
  });
});
