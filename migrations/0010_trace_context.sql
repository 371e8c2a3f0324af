-- OpenTelemetry trace context (issue 12 §3; src/telemetry/). Both columns are written only when tracing is on.

-- The W3C traceparent of the task's start span: hops that no envelope carries (a timeout, an approval decided
-- through the API, a cancel, a resume after parking) continue the task's trace from here.
ALTER TABLE tasks ADD COLUMN traceparent text;

-- The traceparent of the hop that dispatched a foreign call: the egress span (sender) and the callback span
-- (callback route, poller) are its children, whenever and wherever they run.
ALTER TABLE a2a_bridge ADD COLUMN traceparent text;
