/**
 * W3C `traceparent` values (https://www.w3.org/TR/trace-context/#traceparent-header) to and from span contexts, as
 * the envelope's `trace` field, the task and bridge rows and A2A request headers carry them. Hand-rolled rather than
 * the SDK's propagator: product code depends on `@opentelemetry/api` only, and a value from the bus or a database
 * row is untrusted text — anything malformed is simply no parent (a new trace), never an error.
 */
import { context, ROOT_CONTEXT, trace, TraceFlags, type Context, type Span, type SpanContext } from "@opentelemetry/api";

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;
const ZERO_TRACE = "00000000000000000000000000000000";
const ZERO_SPAN = "0000000000000000";

/** The span context a `traceparent` names, or undefined when it is empty or malformed. */
export function parseTraceparent(value: string | null | undefined): SpanContext | undefined {
  if (!value) return undefined;
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags] = match;
  // Version ff is forbidden; version 00 has exactly four fields.
  if (version === "ff" || (version === "00" && value.trim().length !== 55)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId: traceId!, spanId: spanId!, traceFlags: parseInt(flags!, 16) & TraceFlags.SAMPLED, isRemote: true };
}

export function formatTraceparent(span: SpanContext): string {
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? "01" : "00"}`;
}

/** The `traceparent` of a span (what a child in another process continues). */
export function traceparentOf(span: Span): string {
  return formatTraceparent(span.spanContext());
}

/**
 * A context whose parent is the first valid `traceparent` of `candidates`; the active context when none is (so a
 * span started inside an API request is its child); ROOT_CONTEXT never implied otherwise.
 */
export function parentContext(...candidates: Array<string | null | undefined>): Context {
  for (const value of candidates) {
    const parent = parseTraceparent(value);
    if (parent) return trace.setSpanContext(ROOT_CONTEXT, parent);
  }
  return context.active();
}

/** The `traceparent` of the span active right now (an API request's), or undefined outside any span. */
export function activeTraceparent(): string | undefined {
  const span = trace.getSpan(context.active());
  if (!span || !span.spanContext() || !trace.isSpanContextValid(span.spanContext())) return undefined;
  return traceparentOf(span);
}

/**
 * The traceparent an envelope written for `stored`'s trace should carry: the active span when it belongs to that
 * trace (the callback or egress span that caused the write), else `stored` itself. Group-committed work runs in
 * whichever caller's context flushed the batch, so an active span of ANOTHER trace is never borrowed.
 */
export function continueTrace(stored: string | null | undefined): string | undefined {
  const parent = parseTraceparent(stored);
  if (!parent) return undefined;
  const active = trace.getSpan(context.active())?.spanContext();
  return active && active.traceId === parent.traceId && trace.isSpanContextValid(active) ? formatTraceparent(active) : (stored ?? undefined);
}
