/**
 * The harness's span: `switchyard.turn`, one per handler run, a child of the WORK / REPLY envelope's traceparent
 * (the coordinator hop that sent it). The handler runs inside it (its own instrumented calls nest under the turn),
 * and the RESULT / QUERY / heartbeat / reply request the turn publishes carry the turn's traceparent, so the hop that
 * applies them — a delegated sub-query's included — is the turn's child. Built only when tracing is on.
 */
import { create } from "@bufbuild/protobuf";
import { context, SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { EndpointKind, type Envelope } from "../bus/codec.js";
import { TraceContextSchema } from "../gen/switchyard/bus/v1/envelope_pb.js";
import { parentContext, traceparentOf } from "./traceparent.js";
import { tracer } from "./tracing.js";

/** `queue`: the harness's own endpoint (role or team). */
export function startTurnSpan(incoming: Envelope, queue: { kind: EndpointKind; id: string }): Span {
  const role = `${queue.kind === EndpointKind.TEAM ? "team" : "role"}:${queue.id}`;
  return tracer().startSpan(
    "switchyard.turn",
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        "switchyard.role": role,
        "switchyard.tenant": incoming.orgId,
        "switchyard.task": incoming.taskId,
        "switchyard.step": incoming.stepId,
        "switchyard.attempt": incoming.attempt,
        "switchyard.envelope": incoming.id,
        ...(incoming.turn !== undefined ? { "switchyard.turn": incoming.turn } : {}),
      },
    },
    parentContext(incoming.trace?.traceparent),
  );
}

/** Runs `fn` with `span` active (no context work without a span). */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  return span ? context.with(trace.setSpan(context.active(), span), fn) : fn();
}

/** Stamps the turn's traceparent on an envelope it publishes (created by the turn, not yet signed). */
export function stampTrace(span: Span | undefined, outgoing: Envelope): Envelope {
  if (span) outgoing.trace = create(TraceContextSchema, { traceparent: traceparentOf(span), tracestate: "" });
  return outgoing;
}

/** `completed`, `delegated`: OK; `failed`, `unsent`: an error; `abandoned`, `stale`, `duplicate`: unset. */
export function endTurnSpan(span: Span | undefined, outcome: string, error?: unknown): void {
  if (!span) return;
  span.setAttribute("switchyard.outcome", outcome);
  if (outcome === "completed" || outcome === "delegated") span.setStatus({ code: SpanStatusCode.OK });
  else if (outcome === "failed" || outcome === "unsent") {
    if (error !== undefined) span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: `turn ${outcome}` });
  }
  span.end();
}
