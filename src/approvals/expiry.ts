/**
 * Approval expiry: an approval nobody decided by its deadline (`expires_at`, set when it was opened) is denied by
 * `system:expiry` and its step fails closed with POLICY_DENIED — through the same decision path as a person's,
 * so the engine writes the one `approval` audit row. Every coordinator runs this on its sweep; when several race
 * on the same approval, the approval's row lock lets the first decide and the rest find it decided.
 */
import type { Engine } from "../coordinator/engine.js";
import type { OwnedShards } from "../coordinator/shard-ownership.js";
import type { OutboxPublisher } from "../coordinator/outbox-publisher.js";
import { EXPIRY_ACTOR, TaskService } from "../tasks/tasks.js";
import { listOverdueApprovals } from "../coordinator/approval-store.js";
import { silentLogger, type Logger } from "../logger.js";
import type { TenantSelection } from "../flags/flag-types.js";
import type { Pool, Queryable } from "../store/db.js";

/** What expiry needs of the task service: a decision that is idempotent under the approval's row lock. */
export type ApprovalDecider = Pick<TaskService, "decideApproval">;

export interface ExpireApprovalsOptions {
  pool: Queryable;
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
  const overdue = await listOverdueApprovals(options.pool, options.now, options.limit ?? 100, options.tenants, options.shards);
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
 * The coordinator's default sweep hook: expires overdue approvals through a task service built on the
 * coordinator's own engine and publisher.
 */
export function approvalExpirySweep(deps: {
  pool: Pool;
  engine: Engine;
  publisher?: OutboxPublisher;
  logger?: Logger;
  limit?: number;
  /** Asked at every sweep: the tenants whose coordinator is switched on. @defaultValue all */
  tenants?: () => TenantSelection;
  /** Asked at every sweep: the shards this coordinator owns. @defaultValue every tenant */
  shards?: () => OwnedShards;
}): (now: number) => Promise<ExpireApprovalsResult> {
  // Only decides approvals and never starts a task, so no task input is ever measured against the payload cap.
  const tasks = new TaskService({ pool: deps.pool, engine: deps.engine, publisher: deps.publisher, maxPayloadBytes: 0 });
  return (now) => expireApprovals({ pool: deps.pool, tasks, now, logger: deps.logger, limit: deps.limit, tenants: deps.tenants?.(), shards: deps.shards?.() });
}
