/**
 * An in-memory tracer provider for tracing tests: registered globally (the AsyncLocalStorage context manager, as
 * the SDK does in a process) and switched on for Switchyard's spans with `on()`; `off()` leaves the provider
 * registered, so any span our code built without asking `tracingOn()` would still be recorded — and fail the test.
 */
import { context, propagation, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-node";
import { useTracerProvider } from "../../src/telemetry/tracing.js";

export interface TestTracing {
  exporter: InMemorySpanExporter;
  on(): void;
  off(): void;
  spans(): ReadableSpan[];
  close(): Promise<void>;
}

export function createTestTracing(): TestTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  provider.register();
  return {
    exporter,
    on: () => useTracerProvider(provider),
    off: () => useTracerProvider(undefined),
    spans: () => exporter.getFinishedSpans(),
    async close() {
      useTracerProvider(undefined);
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** `spanId` of a span's parent, or undefined for a root. */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** A readable picture of a trace for failure messages: name and parent of every span. */
export function describeSpans(spans: readonly ReadableSpan[]): string {
  const names = new Map(spans.map((s) => [s.spanContext().spanId, s.name]));
  return spans.map((s) => `${s.name} <- ${parentOf(s) ? (names.get(parentOf(s)!) ?? parentOf(s)) : "(root)"}`).join("\n");
}
