/**
 * The span that opens a task's trace: `switchyard.task.start`, a child of the request that started it (the API call,
 * an ingest delivery) when there was one. Its `traceparent` is stored on the task row (`tasks.traceparent`,
 * migration 0010) and carried by the start envelope, so every hop of the task — including those no envelope causes,
 * after parking on an approval or a timeout — continues the same trace.
 */
import { SpanKind } from "@opentelemetry/api";
import { parentContext, traceparentOf } from "./traceparent.js";
import { tracer } from "./tracing.js";

/** Only when tracing is on. Returns the task's root traceparent; the span ends at once (the start is instant). */
export function recordTaskStart(orgId: string, taskId: string, workflow: string, parent: string | undefined): string {
  const span = tracer().startSpan(
    "switchyard.task.start",
    { kind: SpanKind.PRODUCER, attributes: { "switchyard.tenant": orgId, "switchyard.task": taskId, "switchyard.workflow": workflow } },
    parentContext(parent),
  );
  const traceparent = traceparentOf(span);
  span.end();
  return traceparent;
}
