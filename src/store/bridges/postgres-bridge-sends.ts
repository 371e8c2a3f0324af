/**
 * The sender's statements on `a2a_bridge` (foreign/sender.ts), in the bridges adapter: claiming `pending_send`
 * bridges within the pool's rooms (send-slots.ts), finding which in-flight calls lost their step attempt so their
 * calls are aborted, and recording a send, a call's start and its heartbeats.
 *
 * A claim locks with `FOR UPDATE SKIP LOCKED` (several coordinators share the work) and sets a lease
 * (`claimed_until`), so a crashed sender's bridge is picked up again after it. Tenants without room are left out
 * before the scan, so one tenant's backlog cannot fill the scanned candidates and hide everyone else's; the
 * candidates are then ranked per tenant (oldest first) and each tenant gets at most its room, oldest ranks first
 * across tenants, so tenants take turns.
 */
import { tenantSqlClause } from "../../flags/flag-types.js";
import type { OutboxEnvelope } from "../../foreign/foreign-result.js";
import type { Queryable } from "../db.js";
import { BRIDGE_COLUMNS_OF_B, toBridge } from "./bridge-columns.js";
import type { ClaimedBridge, ClaimRequest, SentBridge } from "./bridge-store.js";

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

/** Hands a claimed bridge back unsent (switched off since the claim): it waits for when it is on again. */
export async function releaseClaim(db: Queryable, bridgeId: string): Promise<void> {
  await db.query("UPDATE a2a_bridge SET claimed_until = NULL WHERE id = $1 AND status = 'pending_send'", [bridgeId]);
}

/** Records that the send succeeded: the foreign task id (agreeing with one a racing push may have set) and delivery. */
export async function recordSent(db: Queryable, bridgeId: string, sent: SentBridge): Promise<string | null | undefined> {
  const { rows } = await db.query<{ foreign_task_id: string | null }>(
    `UPDATE a2a_bridge SET foreign_task_id = COALESCE(foreign_task_id, $2), dialect = $3, claimed_until = NULL, updated_at = now(),
       -- A call's progress may have moved the deadline on (call-heartbeat.ts): never back.
       deadline_ms = GREATEST(deadline_ms, $4),
       status = CASE WHEN status = 'pending_send' THEN 'dispatched' ELSE status END,
       -- A completed push that raced the answer (waiting for its GetTask confirmation) keeps its state.
       last_state = CASE WHEN status = 'pending_send' AND last_state IS DISTINCT FROM 'completed' THEN $5 ELSE last_state END,
       delivery = $6, sent_at = COALESCE(sent_at, now()),
       next_poll_at = CASE WHEN $7::double precision IS NULL THEN next_poll_at ELSE now() + make_interval(secs => $7::double precision / 1000) END
     WHERE id = $1 RETURNING foreign_task_id`,
    [bridgeId, sent.foreignTaskId, sent.dialect, sent.deadlineMs, sent.state, sent.delivery, sent.firstPollMs],
  );
  return rows[0]?.foreign_task_id;
}

/** The call under way (a call that IS the work): out of `pending_send` before it is made, so it is never made twice. */
export async function markStarted(db: Queryable, bridgeId: string, foreignTaskId: string, deadlineMs: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE a2a_bridge SET foreign_task_id = $2, status = 'dispatched', last_state = 'submitted', deadline_ms = $3, delivery = 'call',
       sent_at = now(), claimed_until = NULL, updated_at = now()
     WHERE id = $1 AND status = 'pending_send'`,
    [bridgeId, foreignTaskId, deadlineMs],
  );
  return rowCount === 1;
}

/**
 * One heartbeat of a call (foreign/call-heartbeat.ts): written to the outbox only while the bridge is open and its
 * step attempt still in flight, in the same statement that moves the bridge's `deadline_ms` on.
 */
export async function writeHeartbeat(db: Queryable, bridgeId: string, out: OutboxEnvelope, deadlineMs: number): Promise<number | undefined> {
  const { rows } = await db.query<{ id: string }>(
    `WITH live AS (
       UPDATE a2a_bridge b SET deadline_ms = GREATEST(b.deadline_ms, $6::bigint), updated_at = now()
       FROM steps s
       WHERE b.id = $1 AND b.status IN ('dispatched', 'working')
         AND s.task_id = b.task_id AND s.step_id = b.step_id AND s.status = 'dispatched' AND s.attempt = b.attempt
       RETURNING b.id)
     INSERT INTO outbox (org_id, stream, envelope_id, envelope)
     SELECT $2, $3, $4, $5::bytea FROM live RETURNING id`,
    [bridgeId, out.orgId, out.stream, out.envelopeId, Buffer.from(out.bytes.buffer, out.bytes.byteOffset, out.bytes.byteLength), deadlineMs],
  );
  return rows[0] ? Number(rows[0].id) : undefined;
}
