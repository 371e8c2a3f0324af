/**
 * API request metrics: `switchyard_api_requests_total{service,method,code}` and
 * `switchyard_api_request_seconds{service,method}` (for streams: until the stream ends), on the runtime's registry.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { Counter, Histogram, type Registry } from "prom-client";
import { watchCall } from "./call-outcome.js";

interface RequestMetrics {
  requests: Counter<"service" | "method" | "code">;
  latency: Histogram<"service" | "method">;
}

/** Several gateways may share one registry (tests): the second reuses the first one's metrics. */
function requestMetrics(registry: Registry): RequestMetrics {
  const requests =
    (registry.getSingleMetric("switchyard_api_requests_total") as RequestMetrics["requests"] | undefined) ??
    new Counter({ name: "switchyard_api_requests_total", help: "API calls by service, method and Connect code", labelNames: ["service", "method", "code"], registers: [registry] });
  const latency =
    (registry.getSingleMetric("switchyard_api_request_seconds") as RequestMetrics["latency"] | undefined) ??
    new Histogram({
      name: "switchyard_api_request_seconds",
      help: "API call duration (server streams: until the stream ends)",
      labelNames: ["service", "method"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    });
  return { requests, latency };
}

function codeName(error: unknown): string {
  const code = error instanceof ConnectError ? error.code : Code.Unknown;
  return Code[code]?.toLowerCase() ?? "unknown";
}

export function createMetricsInterceptor(registry: Registry): Interceptor {
  const metrics = requestMetrics(registry);
  return (next) => async (req) => {
    const labels = { service: req.service.name, method: req.method.name };
    const stop = metrics.latency.startTimer(labels);
    const finish = (code: string) => {
      stop();
      metrics.requests.inc({ ...labels, code });
    };
    return watchCall(next, req, {
      failed: (error) => (finish(codeName(error)), error),
      ended: () => finish("ok"),
    });
  };
}
