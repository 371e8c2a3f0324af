/**
 * Where tracing finds a task's root context (issue 27 §2): the `traceparent` stored at its start, the parent of
 * the hop spans of events no envelope carried (a timeout, an approval decided through the API, a cancel). Read by
 * the engine once per batch, and only when tracing is on (telemetry/hop-spans.ts). The Postgres adapter is
 * postgres-trace-root-store.ts beside this.
 */
import type { Queryable } from "../db.js";

export interface TraceRootStore {
  /** Task id → its root `traceparent`, for those of `taskIds` stored with one. */
  load(db: Queryable, taskIds: readonly string[]): Promise<Map<string, string>>;
}
