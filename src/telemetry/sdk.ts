/**
 * Starting and stopping the OpenTelemetry SDK in a process entry (`switchyard start …`, the demo), only when
 * `config.telemetry.tracing` is on. The SDK is imported lazily: a process with tracing off never loads it (start-up
 * time, memory), and product code only ever sees `@opentelemetry/api` (tracing.ts).
 *
 * Exporters: `otlp` (OTLP/HTTP, which reads the standard OTEL_EXPORTER_OTLP_* variables — endpoint, headers,
 * timeout — itself) and `console` (stdout), as OTEL_TRACES_EXPORTER names them (config.telemetry.exporters).
 *
 * The SDK packages are optional dependencies (a worker's `npm install switchyard --omit=optional` leaves them out,
 * README "Installing for a worker"): turning tracing on without them is a SwitchyardError naming the package.
 */
import { context, propagation, trace } from "@opentelemetry/api";
import type { TelemetryConfig } from "../config/index.js";
import { loadOptionalPackage } from "../process/optional-package.js";
import type { Logger } from "../logger.js";
import { useTracerProvider } from "./tracing.js";

export interface Tracing {
  /** Exports what is buffered and stops the SDK; idempotent, never throws (a collector that is down loses spans). */
  shutdown(): Promise<void>;
}

const off: Tracing = { shutdown: async () => {} };

export interface StartTracingOptions {
  /** `switchyard-<role>` names the service when OTEL_SERVICE_NAME is unset. */
  role: string;
  logger: Logger;
}

export async function startTracing(config: TelemetryConfig, options: StartTracingOptions): Promise<Tracing> {
  if (!config.tracing) return off;
  const [{ NodeTracerProvider, BatchSpanProcessor, SimpleSpanProcessor, ConsoleSpanExporter }, { resourceFromAttributes }] = await Promise.all([
    optional("@opentelemetry/sdk-trace-node", () => import("@opentelemetry/sdk-trace-node")),
    optional("@opentelemetry/resources", () => import("@opentelemetry/resources")),
  ]);
  const serviceName = config.serviceName ?? `switchyard-${options.role}`;
  const spanProcessors = [];
  if (config.exporters.includes("otlp")) {
    const { OTLPTraceExporter } = await optional("@opentelemetry/exporter-trace-otlp-http", () => import("@opentelemetry/exporter-trace-otlp-http"));
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  }
  // Each span as it ends, on stdout: for looking at traces without a collector (OTEL_TRACES_EXPORTER=console).
  if (config.exporters.includes("console")) spanProcessors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
  const provider = new NodeTracerProvider({ resource: resourceFromAttributes({ "service.name": serviceName }), spanProcessors });
  // Global: the AsyncLocalStorage context manager (an API request's span is the parent of what it starts) and the
  // W3C propagator for any instrumented library.
  provider.register();
  useTracerProvider(provider);
  options.logger.info({ serviceName, exporters: config.exporters }, "tracing on: spans are exported");
  let stopping: Promise<void> | undefined;
  return {
    shutdown: () =>
      (stopping ??= (async () => {
        useTracerProvider(undefined);
        try {
          await provider.shutdown();
        } catch (error) {
          options.logger.warn({ err: error }, "could not export the last spans at shutdown");
        }
        trace.disable();
        context.disable();
        propagation.disable();
      })()),
  };
}

function optional<T>(name: string, load: () => Promise<T>): Promise<T> {
  return loadOptionalPackage(name, load, { needs: "tracing is on and needs", orElse: "leave tracing off (OTEL_SDK_DISABLED=true)" });
}

/** Runs a process's main with tracing started (when on) and flushed/shut down after it returned or threw. */
export async function withTracing<T>(config: TelemetryConfig, options: StartTracingOptions, main: () => Promise<T>): Promise<T> {
  const tracing = await startTracing(config, options);
  try {
    return await main();
  } finally {
    await tracing.shutdown();
  }
}
