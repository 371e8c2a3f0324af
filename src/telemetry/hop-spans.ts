/**
 * The coordinator's spans: one `switchyard.hop` span per applied event (a RESULT, a QUERY, a task start, an approval,
 * a timeout …), a child of the envelope that caused it — or, for an event no envelope carried (a timeout, an approval
 * decided through the API, a cancel), of the task's root context stored at its start (`tasks.traceparent`,
 * which the engine reads through its TraceRootStore port and hands in). Every WORK / REPLY / foreign dispatch the
 * event emits carries the span's `traceparent`, so the next turn is its child.
 *
 * One span per event rather than per batch: a batch mixes tasks (and traces), and per event is what a reader of
 * one task's trace wants. Governor verdicts, the audit append (with its chain seq) and the commit are span events.
 * Built only when tracing is on (tracing.ts); the engine never calls into this module otherwise.
 */
import { SpanKind, SpanStatusCode, type Attributes, type Span } from "@opentelemetry/api";
import type { AuditRow } from "../domain.js";
import type { CoordinatorEvent, Effect, EnvelopeSpec } from "../core/model.js";
import { parentContext, traceparentOf } from "./traceparent.js";
import { tracer } from "./tracing.js";

export interface HopEventInput {
  orgId: string;
  taskId: string;
  event: CoordinatorEvent;
  /** The `traceparent` of the envelope that carried the event, when one did. */
  traceparent?: string | undefined;
}

export class HopSpans {
  private readonly open: Span[] = [];
  private readonly byEnvelope = new Map<string, Span>();
  private roots = new Map<string, string>();

  /**
   * The tasks' root contexts (store/telemetry/trace-root-store.ts), read by the engine once per batch and only when
   * tracing is on: the parents of events no envelope carried.
   */
  useRoots(roots: Map<string, string>): void {
    this.roots = roots;
  }

  /** Starts the span of one event; undefined for heartbeats (liveness, not a hop worth a span). */
  start(input: HopEventInput): Span | undefined {
    const { event } = input;
    if (event.type === "heartbeat") return undefined;
    const attributes: Attributes = {
      "switchyard.tenant": input.orgId,
      "switchyard.task": input.taskId,
      "switchyard.event": event.type,
      "switchyard.envelope": event.eventId,
    };
    const stepId = "stepId" in event ? event.stepId : event.type === "query" ? event.originStepId : null;
    if (stepId) attributes["switchyard.step"] = stepId;
    if ("attempt" in event) attributes["switchyard.attempt"] = event.attempt;
    const span = tracer().startSpan(`switchyard.hop ${event.type}`, { kind: SpanKind.CONSUMER, attributes }, parentContext(input.traceparent, this.roots.get(input.taskId)));
    this.open.push(span);
    return span;
  }

  /** An event that changed nothing (refused or ignored): its span ends now, saying why. */
  skipped(span: Span | undefined, outcome: "refused" | "ignored", reason: string): void {
    if (!span) return;
    span.setAttribute("switchyard.outcome", outcome);
    span.addEvent(outcome, { reason });
    span.end();
    this.open.splice(this.open.indexOf(span), 1);
  }

  /**
   * Records the decision's hops as `governor` events (action, verdict, rule) and returns the effects with every
   * outgoing envelope carrying this span's `traceparent` (copies: decisions may be shared, never mutated).
   */
  decided(span: Span | undefined, effects: readonly Effect[]): readonly Effect[] {
    if (!span) return effects;
    const traceparent = traceparentOf(span);
    let out: Effect[] | undefined;
    let hops = 0;
    for (const [i, effect] of effects.entries()) {
      if (effect.type === "hop") {
        const { facts, verdict, envelopeId } = effect.hop;
        span.addEvent("governor", { action: facts.action, verdict: verdict.verdict, rule: verdict.rule, step: facts.stepId, destination: `${facts.destination.kind}:${facts.destination.id}` });
        // The first hop names the span's action and verdict; a fan-out lists the others as events only.
        if (hops++ === 0) span.setAttributes({ "switchyard.action": facts.action, "switchyard.verdict": verdict.verdict, "switchyard.step": facts.stepId });
        this.byEnvelope.set(envelopeId, span);
      } else if (effect.type === "audit") {
        this.byEnvelope.set(effect.entry.envelopeId, span);
      } else if (effect.type === "send" || effect.type === "foreign_dispatch") {
        out ??= [...effects];
        out[i] = { ...effect, envelope: withTrace(effect.envelope, traceparent) };
      }
    }
    if (hops > 1) span.setAttribute("switchyard.hops", hops);
    return out ?? effects;
  }

  /** The audit rows the batch appended: an `audit` event (seq, action, verdict) on the span that wrote each. */
  audited(rows: readonly AuditRow[]): void {
    for (const row of rows) {
      const span = this.byEnvelope.get(row.envelopeId);
      if (!span) continue;
      span.addEvent("audit", { seq: row.seq, action: row.action, verdict: row.verdict });
      span.setAttribute("switchyard.audit.seq", row.seq);
    }
  }

  /**
   * Ends every open span: `commit` once the transaction committed; `applied` when the caller's transaction commits
   * later (TaskService); an error status when it rolled back.
   */
  end(outcome: { committed: true | "by the caller" } | { committed: false; error: unknown }): void {
    for (const span of this.open) {
      if (outcome.committed === true) span.addEvent("commit");
      else if (outcome.committed) span.addEvent("applied");
      else {
        span.recordException(outcome.error instanceof Error ? outcome.error : String(outcome.error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: "the batch rolled back" });
      }
      span.end();
    }
    this.open.length = 0;
    this.byEnvelope.clear();
  }
}

function withTrace(envelope: EnvelopeSpec, traceparent: string): EnvelopeSpec {
  return { ...envelope, traceparent };
}
