/**
 * Listing a tenant's tasks, newest first, with filters and keyset paging. The page token is opaque to callers:
 * base64url of the last row's exact `created_at` (as Postgres prints it, microseconds included) and id, so paging
 * is stable while new tasks arrive.
 */
import type { TaskStatus } from "../core/model.js";
import type { TaskView } from "../tasks/tasks.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { TaskReadStore } from "../store/tasks/task-read-store.js";
import { parseWorkflowRef } from "../store/workflow-store.js";

import { DEFAULT_TASK_PAGE_SIZE, MAX_TASK_PAGE_SIZE } from "./task-page.js";

export { DEFAULT_TASK_PAGE_SIZE, MAX_TASK_PAGE_SIZE } from "./task-page.js";

export interface TaskListFilter {
  /** Empty or absent: every status. */
  statuses?: readonly TaskStatus[];
  /** `name` (any version) or `name@version`. */
  workflow?: string;
  pageSize?: number;
  pageToken?: string;
  /** Only tasks created at or after this instant. */
  createdAfter?: Date;
  /** Only tasks created before this instant. */
  createdBefore?: Date;
}

/** A task in a listing: the TaskView without input and steps. */
export type TaskSummaryView = Omit<TaskView, "orgId" | "input" | "steps" | "replyTo" | "replies">;

export interface TaskPage {
  tasks: TaskSummaryView[];
  /** null on the last page. */
  nextPageToken: string | null;
}

// What `created_at::text` prints: `2024-05-01 10:00:00.123456+00`.
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:\d{2})?$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Cursor {
  at: string;
  id: string;
}

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.at, cursor.id])).toString("base64url");
}

function decodeCursor(token: string): Cursor {
  try {
    const [at, id] = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as unknown[];
    if (typeof at === "string" && typeof id === "string" && TIMESTAMP_RE.test(at) && UUID_RE.test(id)) return { at, id };
  } catch {
    // fall through to the error below
  }
  throw new SwitchyardError(ErrorCode.InvalidArgument, "page_token: not a token this API handed out; pass next_page_token unchanged", {
    details: { path: "page_token" },
  });
}

export async function listTasks(reads: Pick<TaskReadStore, "page">, db: Queryable, orgId: string, filter: TaskListFilter = {}): Promise<TaskPage> {
  const pageSize = filter.pageSize || DEFAULT_TASK_PAGE_SIZE;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || pageSize > MAX_TASK_PAGE_SIZE) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `page_size: must be from 1 to ${MAX_TASK_PAGE_SIZE}`, { details: { path: "page_size" } });
  }
  const workflow = filter.workflow ? parseWorkflowFilter(filter.workflow) : undefined;
  const cursor = filter.pageToken ? decodeCursor(filter.pageToken) : undefined;
  const statuses = filter.statuses && filter.statuses.length > 0 ? [...filter.statuses] : null;
  const rows = await reads.page(db, orgId, {
    statuses,
    workflowName: workflow?.name ?? null,
    workflowVersion: workflow?.version ?? null,
    after: cursor ?? null,
    limit: pageSize + 1,
    createdAfter: instant(filter.createdAfter, "created_after"),
    createdBefore: instant(filter.createdBefore, "created_before"),
  });
  const page = rows.slice(0, pageSize);
  const last = page.at(-1);
  return {
    tasks: page.map((row) => ({
      id: row.id,
      workflow: `${row.workflowName}@${row.workflowVersion}`,
      status: row.status,
      cost: row.cost,
      budget: row.budget,
      error: row.error,
      createdAt: row.createdAt.toISOString(),
      finishedAt: row.finishedAt ? row.finishedAt.toISOString() : null,
    })),
    nextPageToken: rows.length > pageSize && last ? encodeCursor({ at: last.cursorAt, id: last.id }) : null,
  };
}

function instant(value: Date | undefined, path: string): Date | null {
  if (value === undefined) return null;
  if (Number.isNaN(value.getTime())) throw new SwitchyardError(ErrorCode.InvalidArgument, `${path}: not a valid instant`, { details: { path } });
  return value;
}

function parseWorkflowFilter(text: string): { name: string; version: number | null } {
  try {
    return parseWorkflowRef(text);
  } catch (error) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `workflow: expected NAME or NAME@VERSION, got ${JSON.stringify(text)}`, {
      cause: error,
      details: { path: "workflow" },
    });
  }
}
