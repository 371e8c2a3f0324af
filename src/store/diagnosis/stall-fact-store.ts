/**
 * The storage port of stall diagnosis (issue 27 §2): what `explainStall` reads from Postgres about a task that does
 * not move, beyond the flags (read through the flags' own port). diagnosis/stall-facts-local.ts takes it; the
 * Postgres adapter is postgres-stall-fact-store.ts beside this file.
 */
import type { Queryable } from "../db.js";

/** An approval a parked step waits on. */
export interface ApprovalFactRow {
  id: string;
  rule: string;
  reason: string;
  createdAt: Date;
}

/** The bridge of a FOREIGN step. */
export interface BridgeFactRow {
  id: string;
  agentKey: string;
  /** a2a_bridge.status: pending_send, dispatched, working, … */
  status: string;
  updatedAt: Date | null;
}

export interface StallFactStore {
  /** The tenant's approval, or undefined (also for another tenant's id). */
  approval(db: Queryable, orgId: string, approvalId: string): Promise<ApprovalFactRow | undefined>;
  /** The newest bridge of the step (its latest attempt), or undefined. */
  bridge(db: Queryable, orgId: string, taskId: string, stepId: string): Promise<BridgeFactRow | undefined>;
}
