/**
 * Steps whose time has come: a timeout of a dispatched or waiting attempt, or the end of a retry's backoff. The
 * sweep turns each into a `step_due` event, deduplicated by an id naming the attempt and its due time, so two
 * coordinators sweeping the same step apply it once. The steps are read through the SweepStore port
 * (store/coordinator/coordinator-store.ts).
 */
import type { TenantSelection } from "../flags/flag-types.js";
import type { OwnedShards } from "./shard-ownership.js";
import { applyIsolating, type IsolatedApplyDeps } from "./isolated-apply.js";
import type { OutboxRow } from "../store/engine/engine-store.js";
import type { SweepStore } from "../store/coordinator/coordinator-store.js";

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
export async function fireDueSteps(deps: IsolatedApplyDeps & { store: SweepStore }, options: DueStepsOptions): Promise<{ fired: number; outbox: OutboxRow[] }> {
  const candidates = await deps.store.dueSteps(deps.pool, { nowMs: options.now, tenants: options.tenants, shards: options.shards, limit: options.limit ?? 500 });
  const rows = candidates.filter((r) => options.tenantOn(r.orgId));
  if (options.beforeFiring) for (const orgId of new Set(rows.map((r) => r.orgId))) await options.beforeFiring(orgId);
  if (rows.length === 0) return { fired: 0, outbox: [] };
  // Isolated like an inbox batch: a step whose task cannot be applied must not hold back every other timeout.
  const result = await applyIsolating(
    deps,
    rows.map((r) => {
      const eventId = `due:${r.taskId}:${r.stepId}:${r.attempt}:${r.dueAtMs}`;
      return { entryId: eventId, input: { orgId: r.orgId, taskId: r.taskId, dedupe: true, event: { type: "step_due" as const, eventId, stepId: r.stepId, attempt: r.attempt } } };
    }),
  );
  return { fired: rows.length, outbox: result.outbox };
}
