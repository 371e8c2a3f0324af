/**
 * The storage port of the progress waits (sdk/progress-wait.ts, the repo's tests): task and step counts of the
 * whole database or of one tenant, and what is unfinished when a wait finds nothing moving. Reads only; the
 * Postgres adapter is postgres-task-progress-store.ts beside this file.
 */
import type { Queryable } from "../db.js";

/** How many rows are in one status (and, for steps, the attempts they made). */
export interface StatusCount {
  status: string;
  n: number;
}

export interface StepStatusCount extends StatusCount {
  /** The sum of the attempts of the steps in this status. */
  attempts: number;
}

/** An unfinished task with its unfinished steps, each as `step ID (DESTINATION) STATUS, attempt N`. */
export interface UnfinishedTask {
  id: string;
  status: string;
  /** The unfinished steps, `; `-separated, or null when none is. */
  steps: string | null;
}

export interface TaskProgressStore {
  /** Tasks per status, by status; of one tenant when `orgId` is given. */
  taskCounts(db: Queryable, orgId?: string): Promise<StatusCount[]>;
  /** Steps per status with their attempts, by status; of one tenant when `orgId` is given. */
  stepCounts(db: Queryable, orgId?: string): Promise<StepStatusCount[]>;
  /** Up to `limit` unfinished tasks, oldest first; of one tenant when `orgId` is given. */
  unfinished(db: Queryable, limit: number, orgId?: string): Promise<UnfinishedTask[]>;
}
