/**
 * The SDK a process entry starts when OTEL_* turn tracing on: spans reach an OTLP/HTTP endpoint (here a local
 * server standing in for a collector) at the latest when the process shuts down, under the configured service
 * name, or stdout with the console exporter; with tracing off nothing is started and nothing is sent.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startTracing } from "../../src/telemetry/sdk.js";
import { tracer, tracingOn } from "../../src/telemetry/tracing.js";
import { silentLogger } from "../../src/logger.js";

describe("startTracing", () => {
  let server: Server;
  let bodies: Array<{ path: string; body: Buffer }>;
  const saved = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;

  beforeEach(async () => {
    bodies = [];
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        bodies.push({ path: req.url ?? "", body: Buffer.concat(chunks) });
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    // Read by the OTLP exporter itself, as in a process started with it.
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
  });
  afterEach(async () => {
    if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    else process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = saved;
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("exports the process's spans over OTLP/HTTP by the time it shuts down", async () => {
    const tracing = await startTracing({ tracing: true, exporters: ["otlp"], serviceName: null }, { role: "coordinator", logger: silentLogger });
    expect(tracingOn()).toBe(true);
    tracer().startSpan("switchyard.hop task_started", { attributes: { "switchyard.task": "t-1" } }).end();
    await tracing.shutdown();
    expect(tracingOn()).toBe(false);
    expect(bodies.map((b) => b.path)).toEqual(["/v1/traces"]);
    const sent = bodies[0]!.body.toString("latin1");
    expect(sent).toContain("switchyard.hop task_started");
    expect(sent).toContain("switchyard-coordinator");
  });

  it("OTEL_TRACES_EXPORTER=console prints each span as it ends and sends nothing over OTLP", async () => {
    const printed: unknown[] = [];
    const dir = vi.spyOn(console, "dir").mockImplementation((value: unknown) => void printed.push(value));
    try {
      const tracing = await startTracing({ tracing: true, exporters: ["console"], serviceName: "sy-test" }, { role: "coordinator", logger: silentLogger });
      tracer().startSpan("switchyard.hop task_started", { attributes: { "switchyard.task": "t-2" } }).end();
      expect(printed).toEqual([expect.objectContaining({ name: "switchyard.hop task_started", attributes: { "switchyard.task": "t-2" } })]);
      await tracing.shutdown();
    } finally {
      dir.mockRestore();
    }
    expect(bodies).toEqual([]);
  });

  it("starts nothing and sends nothing when tracing is off", async () => {
    const tracing = await startTracing({ tracing: false, exporters: [], serviceName: "x" }, { role: "coordinator", logger: silentLogger });
    expect(tracingOn()).toBe(false);
    await tracing.shutdown();
    expect(bodies).toEqual([]);
  });
});
