/**
 * The gateway's read models of tasks (issue 27 §2): a page of the tenant's task listing, what a task page's step
 * history is folded from (its audit rows and its steps' delegation links), and the fingerprints the Watch hub
 * compares. What a read means (page tokens, the attempt fold, which streams to wake) stays with the gateway
 * (gateway/task-list.ts, step-history.ts, watch-hub.ts); the Postgres adapter is postgres-task-read-store.ts.
 */
import type { TaskRecord, TaskStatus } from "../../core/model.js";
import type { AuditRow } from "../../domain.js";
import type { Queryable } from "../db.js";

/** One page of a listing, as asked: every filter null when not given. */
export interface TaskPageQuery {
  statuses: TaskStatus[] | null;
  workflowName: string | null;
  /** Only with a name; null: any version. */
  workflowVersion: number | null;
  /** Keyset: only tasks before this row in the listing's order (newest first). `at` as `created_at::text` prints it. */
  after: { at: string; id: string } | null;
  createdAfter: Date | null;
  createdBefore: Date | null;
  /** Rows to read: a page and one more, so the caller knows whether another page follows. */
  limit: number;
}

export interface TaskPageRow {
  id: string;
  workflowName: string;
  workflowVersion: number;
  status: TaskStatus;
  budget: number | null;
  cost: number;
  error: TaskRecord["error"];
  createdAt: Date;
  finishedAt: Date | null;
  /** `created_at::text`: the exact instant (microseconds included) a page token carries. */
  cursorAt: string;
}

/** The audit row fields the step history's fold reads. */
export type AuditStepRow = Pick<AuditRow, "seq" | "action" | "actor" | "destination" | "verdict" | "rule" | "reason" | "cost" | "stepId" | "atMs">;

/** A step's place in the delegation tree. */
export interface StepLink {
  stepId: string;
  depth: number;
  delegation: { originStepId?: string; correlationId?: string } | null;
}

export interface TaskReadStore {
  /** The tenant's tasks matching `query`, newest first (`created_at`, then id, descending). */
  page(db: Queryable, orgId: string, query: TaskPageQuery): Promise<TaskPageRow[]>;
  /** The task's audit rows in chain order. */
  auditSteps(db: Queryable, orgId: string, taskId: string): Promise<AuditStepRow[]>;
  /** The delegation links of every step of the task. */
  stepLinks(db: Queryable, orgId: string, taskId: string): Promise<StepLink[]>;
  /**
   * A fingerprint of each task that exists of `taskIds` (its status and each step's status, attempt and approval),
   * by task id, in one statement whatever their tenants: the Watch hub runs it on the owner's pool every interval.
   */
  fingerprints(db: Queryable, taskIds: readonly string[]): Promise<Map<string, string>>;
}
