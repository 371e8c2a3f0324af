/**
 * Approval expiry: an approval nobody decided by its deadline (`expires_at`, set when it was opened) is denied by
 * `system:expiry` and its step fails closed with POLICY_DENIED — through the same decision path as a person's,
 * so the engine writes the one `approval` audit row. Every coordinator runs this on its sweep (handed in as a sweep job); when several race
 * on the same approval, the approval's row lock lets the first decide and the rest find it decided.
 */
import type { OwnedShards } from "../coordinator/shard-ownership.js";
import type { SweepJob } from "../coordinator/sweeps.js";
import { EXPIRY_ACTOR, TaskService } from "../tasks/tasks.js";
import type { ApprovalStore } from "../store/approvals/approval-store.js";
import type { Stores } from "../store/stores.js";
import { silentLogger, type Logger } from "../logger.js";
import type { TenantSelection } from "../flags/flag-types.js";
import type { Queryable } from "../store/db.js";

/** What expiry needs of the task service: a decision that is idempotent under the approval's row lock. */
export type ApprovalDecider = Pick<TaskService, "decideApproval">;

export interface ExpireApprovalsOptions {
  pool: Queryable;
  /** Where the overdue approvals are found (`runtime.stores.approvals`). */
  approvals: Pick<ApprovalStore, "listOverdue">;
  /** An operator (unscoped) task service: expiry crosses tenants. */
  tasks: ApprovalDecider;
  /** The sweep's time (ms); approvals whose deadline is at or before it expire. */
  now: number;
  /** Most approvals expired per call; the rest wait for the next sweep. @defaultValue 100 */
  limit?: number;
  /** Tenants whose approvals may expire now (COORDINATOR_ENABLED); the others wait until switched on. @defaultValue all */
  tenants?: TenantSelection;
  /** Only tenants of these shards (a coordinator's own). @defaultValue every tenant */
  shards?: OwnedShards;
  logger?: Logger;
}

export interface ExpireApprovalsResult {
  /** Approvals this call denied. */
  expired: number;
  /** Overdue approvals someone else decided first (another coordinator, a late person, a link). */
  alreadyDecided: number;
  /** Decisions that failed; they are retried on the next sweep. */
  failed: number;
}

export async function expireApprovals(options: ExpireApprovalsOptions): Promise<ExpireApprovalsResult> {
  const logger = options.logger ?? silentLogger;
  const overdue = await options.approvals.listOverdue(options.pool, options.now, options.limit ?? 100, options.tenants, options.shards);
  const result: ExpireApprovalsResult = { expired: 0, alreadyDecided: 0, failed: 0 };
  for (const approval of overdue) {
    try {
      const outcome = await options.tasks.decideApproval({
        orgId: approval.orgId,
        approvalId: approval.id,
        approve: false,
        actor: EXPIRY_ACTOR,
        reason: `approval expired at ${approval.expiresAt}`,
        via: "expiry",
      });
      if (outcome.alreadyDecided) result.alreadyDecided++;
      else result.expired++;
    } catch (error) {
      // One approval that cannot be decided now must not hold back the others.
      result.failed++;
      logger.error({ err: error, orgId: approval.orgId, approvalId: approval.id }, "expiring an approval failed; retried on the next sweep");
    }
  }
  if (result.expired > 0) logger.info({ ...result }, "expired overdue approvals");
  return result;
}

/**
 * Approval expiry as a coordinator sweep job over `stores.approvals` (the composition roots hand it in: `sweepJobs`):
 * expires overdue approvals of the tenants and shards the coordinator serves, through a task service built on its
 * own fenced engine and publisher.
 */
export function approvalExpirySweep(stores: Pick<Stores, "approvals" | "tasks" | "replies">): SweepJob {
  const { approvals } = stores;
  return (context) => {
    // Only decides approvals and never starts a task, so no task input is ever measured against the payload cap.
    const tasks = new TaskService({ pool: context.pool, engine: context.engine, approvals, tasks: stores.tasks, replies: stores.replies, publisher: context.publisher, maxPayloadBytes: 0 });
    return (now) => expireApprovals({ pool: context.pool, approvals, tasks, now, logger: context.logger, tenants: context.tenants(), shards: context.shards() });
  };
}
