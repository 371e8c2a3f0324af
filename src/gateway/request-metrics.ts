/**
 * API request metrics: `switchyard_api_requests_total{service,method,code}` and
 * `switchyard_api_request_seconds{service,method}` (for streams: until the stream ends), on the runtime's registry.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { Counter, Histogram, type Registry } from "prom-client";

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
    let res;
    try {
      res = await next(req);
    } catch (error) {
      finish(codeName(error));
      throw error;
    }
    if (!res.stream) {
      finish("ok");
      return res;
    }
    const messages = res.message;
    return {
      ...res,
      message: (async function* () {
        try {
          yield* messages;
          finish("ok");
        } catch (error) {
          finish(codeName(error));
          throw error;
        }
      })(),
    };
  };
}
