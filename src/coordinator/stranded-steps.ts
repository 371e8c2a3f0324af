/**
 * The sweep's safety net for lost transitions: workflow steps still `pending` although every step they need has
 * completed. The engine dispatches a step in the same transaction that completes its last need, so such a step
 * means a bug (a stale read, a crash mid-write in some future code path); a pending step has no due time, so no
 * timeout would ever find it. Found here (through the SweepStore port, store/coordinator/coordinator-store.ts), it
 * is repaired through the engine (a `repair` event, audited).
 */
import type { TenantSelection } from "../flags/flag-types.js";
import type { OwnedShards } from "./shard-ownership.js";
import { applyIsolating, type DecodedEntry, type IsolatedApplyDeps } from "./isolated-apply.js";
import type { OutboxRow } from "../store/engine/engine-store.js";
import type { StrandedTask, SweepStore } from "../store/coordinator/coordinator-store.js";

export type { StrandedTask } from "../store/coordinator/coordinator-store.js";

/**
 * How many times `quietMs` a step without needs must have been quiet to count as stranded — unless the caller
 * knows its start event may have been lost (`firstStepQuietMs`: after a Redis outage, see the coordinator's sweep).
 */
export const FIRST_STEP_QUIET_FACTOR = 12;

/**
 * Finds the stranded steps of the tenants served and repairs them through the engine; returns the rows to publish.
 * The engine re-checks under the task lock: a repair of a step that is no longer stranded changes nothing.
 */
export async function repairStrandedSteps(
  deps: IsolatedApplyDeps & { store: SweepStore },
  options: { tenants?: TenantSelection; shards?: OwnedShards; tenantOn: (orgId: string) => boolean; quietMs: number; firstStepQuietMs?: number; limit?: number },
): Promise<OutboxRow[]> {
  const found = await deps.store.strandedTasks(deps.pool, {
    tenants: options.tenants,
    shards: options.shards,
    quietMs: options.quietMs,
    limit: options.limit ?? 100,
    firstStepQuietMs: options.firstStepQuietMs ?? options.quietMs * FIRST_STEP_QUIET_FACTOR,
  });
  const stranded = found.filter((s) => options.tenantOn(s.orgId));
  if (stranded.length === 0) return [];
  deps.logger.warn({ tasks: stranded }, "stranded steps found (pending, every need complete); repairing");
  return (await applyIsolating(deps, repairInputs(stranded))).outbox;
}

/** The engine inputs that repair them; the event id names the steps, so two sweeps repairing the same state dedupe. */
export function repairInputs(stranded: readonly StrandedTask[]): DecodedEntry[] {
  return stranded.map((s) => {
    const eventId = `repair:${s.taskId}:${s.stepIds.join(",")}`;
    return { entryId: eventId, input: { orgId: s.orgId, taskId: s.taskId, dedupe: true, event: { type: "repair" as const, eventId } } };
  });
}
