/**
 * Spans of a foreign hop, all in the task's trace through the bridge row's `traceparent` (the hop that dispatched
 * it, migration 0010):
 * - `switchyard.egress foreign:<agent>`: the sender's whole send of one bridge (retries, the card, the answer);
 * - `switchyard.a2a <Method>`: each A2A JSON-RPC call (SendMessage, GetTask, CancelTask), with its HTTP status; the
 *   request carries the call span's `traceparent` header, so an instrumented agent continues our trace;
 * - `switchyard.callback`: an authenticated push (verify → resume), with the HTTP status answered;
 * - `switchyard.poll`: the poller asking the agent for the task (GetTask), and what it resolved.
 * Built only when tracing is on.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { context, SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { parentContext, traceparentOf } from "./traceparent.js";
import { tracer, tracingOn } from "./tracing.js";

interface BridgeFacts {
  id: string;
  orgId: string;
  taskId: string;
  stepId: string;
  attempt: number;
  agentKey: string;
  traceparent?: string | null | undefined;
}

function bridgeAttributes(bridge: BridgeFacts) {
  return {
    "switchyard.tenant": bridge.orgId,
    "switchyard.task": bridge.taskId,
    "switchyard.step": bridge.stepId,
    "switchyard.attempt": bridge.attempt,
    "switchyard.agent": bridge.agentKey,
    "switchyard.bridge": bridge.id,
  };
}

export function startEgressSpan(bridge: BridgeFacts): Span {
  return tracer().startSpan(`switchyard.egress foreign:${bridge.agentKey}`, { kind: SpanKind.PRODUCER, attributes: bridgeAttributes(bridge) }, parentContext(bridge.traceparent));
}

export function endSpan(span: Span | undefined, error?: unknown, attributes: Record<string, string | number> = {}): void {
  if (!span) return;
  span.setAttributes(attributes);
  if (error !== undefined) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  }
  span.end();
}

export function startPollSpan(bridge: BridgeFacts): Span {
  return tracer().startSpan("switchyard.poll", { kind: SpanKind.INTERNAL, attributes: bridgeAttributes(bridge) }, parentContext(bridge.traceparent));
}

/** Runs `fn` with `span` active (no context work without a span). */
export function inSpan<T>(span: Span | undefined, fn: () => T): T {
  return span ? context.with(trace.setSpan(context.active(), span), fn) : fn();
}

/** One A2A call: a child of the active (egress, poll or cancel) context; undefined when tracing is off. */
export function startA2ACallSpan(method: string, url: string): Span | undefined {
  if (!tracingOn()) return undefined;
  return tracer().startSpan(`switchyard.a2a ${method}`, { kind: SpanKind.CLIENT, attributes: { "rpc.system": "jsonrpc", "rpc.method": method, "url.full": url } });
}

/** The request init with the call span's `traceparent` header added (W3C Trace Context over HTTP). */
export function withTraceHeader(init: RequestInit | undefined, span: Span | undefined): RequestInit | undefined {
  if (!span) return init;
  const headers = new Headers(init?.headers);
  headers.set("traceparent", traceparentOf(span));
  return { ...init, headers };
}

/**
 * The callback's span, started once the push proved it belongs to its bridge (an unauthenticated request never
 * enters a task's trace); ended with the status answered.
 */
export class CallbackTrace {
  private span: Span | undefined;

  verified(bridge: BridgeFacts): void {
    this.span = tracer().startSpan("switchyard.callback", { kind: SpanKind.SERVER, attributes: bridgeAttributes(bridge) }, parentContext(bridge.traceparent));
    this.span.addEvent("verified");
  }

  run<T>(fn: () => T): T {
    return inSpan(this.span, fn);
  }

  resumed(outcome: string): void {
    this.span?.addEvent("resume", { outcome });
    this.span?.setAttribute("switchyard.outcome", outcome);
  }

  end(res: ServerResponse, _req?: IncomingMessage): void {
    if (!this.span) return;
    this.span.setAttribute("http.response.status_code", res.statusCode);
    if (res.statusCode >= 400) this.span.setStatus({ code: SpanStatusCode.ERROR, message: `answered ${res.statusCode}` });
    this.span.end();
  }
}
