/**
 * The sender's two queries: claiming `pending_send` bridges within the pool's rooms (send-slots.ts), and finding
 * which in-flight calls lost their step attempt (cancelled, timed out, retried) so their calls are aborted.
 *
 * A claim locks with `FOR UPDATE SKIP LOCKED` (several coordinators share the work) and sets a lease
 * (`claimed_until`), so a crashed sender's bridge is picked up again after it. Tenants without room are left out
 * before the scan, so one tenant's backlog cannot fill the scanned candidates and hide everyone else's; the
 * candidates are then ranked per tenant (oldest first) and each tenant gets at most its room, oldest ranks first
 * across tenants, so tenants take turns.
 */
import { tenantSqlClause } from "../flags/flag-types.js";
import type { Queryable } from "../store/db.js";
import { BRIDGE_COLUMNS_OF_B, toBridge, type BridgeRecord } from "./bridge-store.js";
import type { ClaimRooms } from "./send-slots.js";

export interface ClaimedBridge {
  bridge: BridgeRecord;
  stepStatus: string | null;
  stepAttempt: number | null;
  dueAtMs: number | null;
  /** The step's own timeout from its workflow definition (null: the coordinator's default applies). */
  stepTimeoutMs: number | null;
}

export interface ClaimRequest {
  rooms: ClaimRooms;
  leaseMs: number;
  /** The coordinator's tenant filter (tenantSqlFilter): only these, or all but these. */
  tenants: { only: readonly string[] | null; except: readonly string[] | null };
}

/** Candidates scanned per claim beyond what may be taken: room for other tenants' rows between a tenant's. */
const SCAN_FACTOR = 4;

export async function claimBridges(db: Queryable, request: ClaimRequest): Promise<ClaimedBridge[]> {
  const { rooms } = request;
  if (rooms.free <= 0) return [];
  const { rows } = await db.query(
    `WITH candidates AS (
       SELECT id, org_id, created_at FROM a2a_bridge
        WHERE status = 'pending_send' AND foreign_task_id IS NULL
          AND (claimed_until IS NULL OR claimed_until < now())
          AND ${tenantSqlClause("org_id", 3)}
          AND org_id <> ALL($5::text[])
        ORDER BY created_at LIMIT $6 FOR UPDATE SKIP LOCKED),
     ranked AS (
       SELECT c.id, c.created_at, row_number() OVER (PARTITION BY c.org_id ORDER BY c.created_at) AS rank,
              COALESCE(r.room, $7::int) AS room
         FROM candidates c LEFT JOIN unnest($8::text[], $9::int[]) AS r(org_id, room) ON r.org_id = c.org_id),
     picked AS (
       SELECT id FROM ranked WHERE rank <= room ORDER BY rank, created_at LIMIT $1)
     -- A SendMessage may last until the step is due (a blocking agent answers when done), so the claim holds at
     -- least that long: another sender must not re-send while this one waits.
     UPDATE a2a_bridge b SET claimed_until = GREATEST(now() + make_interval(secs => $2::double precision / 1000),
         (SELECT to_timestamp((s.due_at_ms + $2::double precision) / 1000.0) FROM steps s WHERE s.task_id = b.task_id AND s.step_id = b.step_id))
     FROM picked WHERE b.id = picked.id
     RETURNING ${BRIDGE_COLUMNS_OF_B},
       (SELECT s.status FROM steps s WHERE s.task_id = b.task_id AND s.step_id = b.step_id) AS step_status,
       (SELECT s.attempt FROM steps s WHERE s.task_id = b.task_id AND s.step_id = b.step_id) AS step_attempt,
       (SELECT s.due_at_ms FROM steps s WHERE s.task_id = b.task_id AND s.step_id = b.step_id) AS due_at_ms,
       -- The step's timeout as the coordinator reads it (hops.ts stepTimeoutMs): the workflow step of that id.
       (SELECT (d->>'timeoutMs')::double precision FROM tasks t
          JOIN workflows w ON w.org_id = t.org_id AND w.name = t.workflow_name AND w.version = t.workflow_version
          CROSS JOIN LATERAL jsonb_array_elements(w.definition->'steps') d
        WHERE t.id = b.task_id AND d->>'id' = b.step_id LIMIT 1) AS step_timeout_ms`,
    [
      rooms.free,
      request.leaseMs,
      request.tenants.only,
      request.tenants.except,
      rooms.full,
      rooms.free * SCAN_FACTOR,
      rooms.defaultRoom,
      rooms.orgs,
      rooms.rooms,
    ],
  );
  return rows.map((row) => ({
    bridge: toBridge(row),
    stepStatus: (row.step_status as string | null) ?? null,
    stepAttempt: (row.step_attempt as number | null) ?? null,
    dueAtMs: row.due_at_ms === null ? null : Number(row.due_at_ms),
    stepTimeoutMs: row.step_timeout_ms === null ? null : Number(row.step_timeout_ms),
  }));
}

/**
 * Of `bridgeIds` (calls in flight here), those whose call should stop: the bridge resolved (or is gone), or its step
 * attempt is no longer the one in flight (the task was cancelled, the step timed out or was retried).
 */
export async function attemptsOver(db: Queryable, bridgeIds: readonly string[]): Promise<string[]> {
  if (bridgeIds.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    `SELECT q.id::text AS id FROM unnest($1::uuid[]) AS q(id)
       LEFT JOIN a2a_bridge b ON b.id = q.id
       LEFT JOIN steps s ON s.task_id = b.task_id AND s.step_id = b.step_id
      WHERE b.id IS NULL OR b.status NOT IN ('pending_send', 'dispatched', 'working')
         OR s.status IS DISTINCT FROM 'dispatched' OR s.attempt IS DISTINCT FROM b.attempt`,
    [bridgeIds],
  );
  return rows.map((row) => row.id);
}

/**
 * Closes a bridge whose hop moved on before the agent named a task for it (`timed_out`); `not_sent` only when
 * nothing may have left. One the agent named (a push before the send was recorded) is the sweep's to close and cancel.
 */
export async function closeUnsentBridge(db: Queryable, bridgeId: string, mayHaveReached: boolean): Promise<void> {
  await db.query(
    `UPDATE a2a_bridge SET status = 'timed_out', last_state = CASE WHEN $2 THEN last_state ELSE 'not_sent' END,
       resolved_at = now(), updated_at = now(), claimed_until = NULL
     WHERE id = $1 AND status = 'pending_send' AND foreign_task_id IS NULL`,
    [bridgeId, mayHaveReached],
  );
}
