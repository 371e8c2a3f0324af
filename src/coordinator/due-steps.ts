/**
 * Steps whose time has come: a timeout of a dispatched or waiting attempt, or the end of a retry's backoff. The
 * sweep turns each into a `step_due` event, deduplicated by an id naming the attempt and its due time, so two
 * coordinators sweeping the same step apply it once.
 */
import { tenantSqlClause, tenantSqlFilter, type TenantSelection } from "../flags/flag-types.js";
import { shardSqlClause, shardSqlParams } from "../bus/shards.js";
import type { OwnedShards } from "./shard-ownership.js";
import { applyIsolating, type IsolatedApplyDeps } from "./isolated-apply.js";
import type { OutboxRow } from "../store/engine/engine-store.js";

export interface DueStepsOptions {
  now: number;
  tenants?: TenantSelection;
  /** Only tenants of these shards (the coordinator's own). @defaultValue every tenant */
  shards?: OwnedShards;
  tenantOn: (orgId: string) => boolean;
  /** Runs for each tenant with due steps before they fire (the coordinator applies its held messages first). */
  beforeFiring?: (orgId: string) => Promise<unknown>;
  /** @defaultValue 500 */
  limit?: number;
}

/** Fires the due steps of the tenants served; returns how many, and the rows to publish. */
export async function fireDueSteps(deps: IsolatedApplyDeps, options: DueStepsOptions): Promise<{ fired: number; outbox: OutboxRow[] }> {
  const { only, except, none } = tenantSqlFilter(options.tenants);
  if (none || options.shards?.owned.length === 0) return { fired: 0, outbox: [] };
  const { rows: candidates } = await deps.pool.query<{ org_id: string; task_id: string; step_id: string; attempt: number; due_at_ms: number }>(
    `SELECT org_id, task_id, step_id, attempt, due_at_ms FROM steps
     WHERE status IN ('dispatched', 'retrying', 'waiting') AND due_at_ms <= $1
       AND ${tenantSqlClause("org_id", 2)} AND ${shardSqlClause("org_id", 4)}
     ORDER BY due_at_ms LIMIT ${options.limit ?? 500}`,
    [options.now, only, except, ...shardSqlParams(options.shards)],
  );
  const rows = candidates.filter((r) => options.tenantOn(r.org_id));
  if (options.beforeFiring) for (const orgId of new Set(rows.map((r) => r.org_id))) await options.beforeFiring(orgId);
  if (rows.length === 0) return { fired: 0, outbox: [] };
  // Isolated like an inbox batch: a step whose task cannot be applied must not hold back every other timeout.
  const result = await applyIsolating(
    deps,
    rows.map((r) => {
      const eventId = `due:${r.task_id}:${r.step_id}:${r.attempt}:${r.due_at_ms}`;
      return { entryId: eventId, input: { orgId: r.org_id, taskId: r.task_id, dedupe: true, event: { type: "step_due" as const, eventId, stepId: r.step_id, attempt: r.attempt } } };
    }),
  );
  return { fired: rows.length, outbox: result.outbox };
}
