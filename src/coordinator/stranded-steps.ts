/**
 * The sweep's safety net for lost transitions: workflow steps still `pending` although every step they need has
 * completed. The engine dispatches a step in the same transaction that completes its last need, so such a step
 * means a bug (a stale read, a crash mid-write in some future code path); a pending step has no due time, so no
 * timeout would ever find it. Found here, it is repaired through the engine (a `repair` event, audited).
 */
import type { Queryable } from "../store/db.js";
import { tenantSqlClause, tenantSqlFilter, type TenantSelection } from "../flags/flag-types.js";
import { shardSqlClause, shardSqlParams } from "../bus/shards.js";
import type { OwnedShards } from "./shard-ownership.js";
import { applyIsolating, type DecodedEntry, type IsolatedApplyDeps } from "./isolated-apply.js";
import type { OutboxRow } from "../store/engine/engine-store.js";

/**
 * How many times `quietMs` a step without needs must have been quiet to count as stranded — unless the caller
 * knows its start event may have been lost (`firstStepQuietMs`: after a Redis outage, see the coordinator's sweep).
 */
export const FIRST_STEP_QUIET_FACTOR = 12;

export interface StrandedTask {
  orgId: string;
  taskId: string;
  stepIds: string[];
}

/**
 * Open tasks with at least one stranded step, oldest first. A step counts once it and each of its needs were
 * last written over `quietMs` ago, which keeps the query off steps the engine is moving right now (the engine
 * re-checks under the task lock anyway: a repair of a step that is no longer stranded changes nothing).
 */
export async function findStrandedSteps(
  db: Queryable,
  options: { tenants?: TenantSelection; shards?: OwnedShards; quietMs: number; limit: number; firstStepQuietMs?: number },
): Promise<StrandedTask[]> {
  const { only, except, none } = tenantSqlFilter(options.tenants);
  if (none || options.shards?.owned.length === 0) return [];
  const { rows } = await db.query<{ org_id: string; task_id: string; step_ids: string[] }>(
    `SELECT p.org_id, p.task_id, array_agg(p.step_id ORDER BY p.step_id) AS step_ids
     FROM steps p
     JOIN tasks t ON t.id = p.task_id AND t.status IN ('running', 'parked')
     JOIN workflows w ON w.org_id = t.org_id AND w.name = t.workflow_name AND w.version = t.workflow_version
     CROSS JOIN LATERAL (SELECT d FROM jsonb_array_elements(w.definition->'steps') d WHERE d->>'id' = p.step_id) def
     WHERE p.status = 'pending' AND p.kind = 'workflow'
       AND p.updated_at < now() - make_interval(secs => $1::double precision / 1000)
       -- A first step (no needs) is dispatched by its task's start event, which may wait its turn in the shard's
       -- inbox behind a backlog (a start is an inbox event since issue 11): such a step counts only after a much
       -- longer quiet time ($7), so a busy inbox is not taken for a lost transition.
       AND (jsonb_array_length(coalesce(def.d->'needs', '[]'::jsonb)) > 0
            OR p.updated_at < now() - make_interval(secs => $7::double precision / 1000))
       AND ${tenantSqlClause("p.org_id", 3)} AND ${shardSqlClause("p.org_id", 5)}
       AND NOT EXISTS (
         SELECT 1 FROM jsonb_array_elements_text(def.d->'needs') n(need)
         WHERE NOT EXISTS (
           SELECT 1 FROM steps q WHERE q.task_id = p.task_id AND q.step_id = n.need AND q.status = 'completed'
             AND q.updated_at < now() - make_interval(secs => $1::double precision / 1000)))
     GROUP BY p.org_id, p.task_id
     ORDER BY min(t.created_at)
     LIMIT $2`,
    [options.quietMs, options.limit, only, except, ...shardSqlParams(options.shards), options.firstStepQuietMs ?? options.quietMs * FIRST_STEP_QUIET_FACTOR],
  );
  return rows.map((r) => ({ orgId: r.org_id, taskId: r.task_id, stepIds: r.step_ids }));
}

/** Finds the stranded steps of the tenants served and repairs them through the engine; returns the rows to publish. */
export async function repairStrandedSteps(
  deps: IsolatedApplyDeps,
  options: { tenants?: TenantSelection; shards?: OwnedShards; tenantOn: (orgId: string) => boolean; quietMs: number; firstStepQuietMs?: number; limit?: number },
): Promise<OutboxRow[]> {
  const found = await findStrandedSteps(deps.pool, {
    tenants: options.tenants,
    shards: options.shards,
    quietMs: options.quietMs,
    limit: options.limit ?? 100,
    ...(options.firstStepQuietMs !== undefined ? { firstStepQuietMs: options.firstStepQuietMs } : {}),
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
