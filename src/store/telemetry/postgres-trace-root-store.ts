/**
 * The tasks' root trace contexts in Postgres (TraceRootStore, trace-root-store.ts): `tasks.traceparent`, written
 * at the task's start.
 */
import type { Queryable } from "../db.js";
import type { TraceRootStore } from "./trace-root-store.js";

/** The root `traceparent` of each task (stored at its start), for events no envelope carried. */
export async function loadTaskTraceparents(db: Queryable, taskIds: readonly string[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ id: string; traceparent: string }>(
    "SELECT id, traceparent FROM tasks WHERE id = ANY($1::uuid[]) AND traceparent IS NOT NULL",
    [[...new Set(taskIds)]],
  );
  return new Map(rows.map((r) => [r.id, r.traceparent]));
}

export function createPostgresTraceRootStore(): TraceRootStore {
  return { load: loadTaskTraceparents };
}
