/**
 * A process's Prometheus endpoint when it does not run the gateway (which serves `/metrics` itself): a standalone
 * `switchyard start coordinator` or `start harness` keeps its counters in its own registry, and they are lost to
 * Prometheus unless that process serves them (`SWITCHYARD_METRICS_PORT`). Also `/healthz`, and `/readyz` when
 * given a readiness check, so an orchestrator can see the process's dependencies as the process sees them.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { silentLogger, type Logger } from "../logger.js";

export interface MetricsServer {
  /** `http://host:port`, the port the server really listens on (0 asks for a free one). */
  url: string;
  close(): Promise<void>;
}

export interface MetricsServerOptions {
  registry: Registry;
  host: string;
  port: number;
  logger?: Logger;
  /** Serves `/readyz` too: 200 when the report says ready, else 503 with it. @defaultValue no /readyz */
  readiness?: () => Promise<{ ready: boolean }>;
}

export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const logger = options.logger ?? silentLogger;
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if ((req.method === "GET" || req.method === "HEAD") && path === "/metrics") {
      options.registry.metrics().then(
        (text) => {
          res.writeHead(200, { "content-type": options.registry.contentType, "cache-control": "no-store" });
          res.end(text);
        },
        (error: unknown) => {
          logger.error({ err: error }, "metrics could not be rendered");
          res.writeHead(500).end();
        },
      );
      return;
    }
    const readiness = options.readiness;
    if ((req.method === "GET" || req.method === "HEAD") && path === "/readyz" && readiness) {
      readiness().then(
        (report) => {
          const text = `${JSON.stringify(report)}\n`;
          res.writeHead(report.ready ? 200 : 503, { "content-type": "application/json", "cache-control": "no-store" });
          res.end(text);
        },
        (error: unknown) => {
          logger.error({ err: error }, "readiness could not be checked");
          res.writeHead(503).end();
        },
      );
      return;
    }
    if ((req.method === "GET" || req.method === "HEAD") && path === "/healthz") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
