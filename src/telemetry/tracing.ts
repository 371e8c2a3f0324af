/**
 * Whether spans are recorded, and the tracer they are recorded with (issue 12 §3; README, "Tracing").
 *
 * OpenTelemetry's API is process-global by design (one tracer provider, one context manager), so the switch is too:
 * `startTracing` (sdk.ts) or a test's `useTracerProvider` turns it on. Product code asks `tracingOn()` BEFORE building
 * any span, attribute object or context, so with tracing off the hot path does no tracing work at all — not even the
 * no-op tracer's calls (measured: bench/README.md, "Tracing cost").
 */
import { trace, type Tracer, type TracerProvider } from "@opentelemetry/api";

export const TRACER_NAME = "switchyard";

let current: Tracer | undefined;

/** True while a tracer provider is installed for Switchyard's spans. */
export function tracingOn(): boolean {
  return current !== undefined;
}

/** The tracer; only call when `tracingOn()`. */
export function tracer(): Tracer {
  return current ?? trace.getTracer(TRACER_NAME);
}

/**
 * Records Switchyard's spans with `provider` (the SDK's, or a test's in-memory one); `undefined` turns tracing off.
 * The provider is also what `@opentelemetry/api`'s globals should point at (sdk.ts registers it), so library
 * instrumentation and ours share one trace.
 */
export function useTracerProvider(provider: TracerProvider | undefined): void {
  current = provider?.getTracer(TRACER_NAME);
}
