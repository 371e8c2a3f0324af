/**
 * The reconciliation sweep's and the poller's statements on `a2a_bridge` (foreign/sweep.ts, foreign/poller.ts), in
 * the bridges adapter. Claims lock with `FOR UPDATE SKIP LOCKED`, so several coordinators sweep and poll at once.
 */
import { tenantSqlClause } from "../../flags/flag-types.js";
import type { Queryable } from "../db.js";
import { BRIDGE_COLUMNS_OF_B, toBridge } from "./bridge-columns.js";
import type { BridgeRecord, BridgeTenants, MovedOnBridge } from "./bridge-store.js";

/**
 * Open bridges whose step attempt is no longer in flight, locked in the caller's transaction, each with whether it
 * moved on because the step or its task was cancelled. A `pending_send` bridge that already has a foreign task id
 * (a push named it before the send was recorded) is the agent's too; one without is the sender's to close unsent.
 */
export async function lockMovedOn(tx: Queryable, limit: number, tenants: BridgeTenants): Promise<MovedOnBridge[]> {
  const { rows } = await tx.query(
    `SELECT ${BRIDGE_COLUMNS_OF_B}, (s.status = 'cancelled' OR t.status = 'cancelled') AS cancelled
     FROM a2a_bridge b JOIN steps s ON s.task_id = b.task_id AND s.step_id = b.step_id JOIN tasks t ON t.id = b.task_id
     WHERE (b.status IN ('dispatched', 'working') OR (b.status = 'pending_send' AND b.foreign_task_id IS NOT NULL))
       AND (s.attempt <> b.attempt OR s.status <> 'dispatched')
       AND ${tenantSqlClause("b.org_id", 2)}
     ORDER BY b.updated_at LIMIT $1 FOR UPDATE OF b SKIP LOCKED`,
    [limit, tenants.only, tenants.except],
  );
  return rows.map((row): MovedOnBridge => ({ bridge: toBridge(row), cancelled: row.cancelled === true }));
}

export async function markTimedOut(tx: Queryable, ids: readonly string[]): Promise<void> {
  await tx.query(`UPDATE a2a_bridge SET status = 'timed_out', resolved_at = now(), updated_at = now(), next_poll_at = NULL WHERE id = ANY($1::uuid[])`, [ids]);
}

/** Open pushed (or not yet known) bridges with no news for `quietMs`; touching `updated_at` keeps the next pass from polling them again at once. */
export async function claimQuiet(db: Queryable, options: { limit: number; quietMs: number; tenants: BridgeTenants }): Promise<BridgeRecord[]> {
  const { rows } = await db.query(
    `WITH picked AS (
       SELECT id FROM a2a_bridge WHERE status IN ('dispatched', 'working') AND foreign_task_id IS NOT NULL
         -- The poller owns polled bridges and those with a GetTask due: the sweep would only ask twice.
         -- A 'call' bridge (MCP) is answered by its call alone: there is no task to look up.
         AND (delivery IS NULL OR delivery NOT IN ('poll', 'call')) AND next_poll_at IS NULL
         AND updated_at < now() - make_interval(secs => $2::double precision / 1000)
         AND ${tenantSqlClause("org_id", 3)}
       ORDER BY updated_at LIMIT $1 FOR UPDATE SKIP LOCKED)
     UPDATE a2a_bridge b SET updated_at = now() FROM picked WHERE b.id = picked.id RETURNING ${BRIDGE_COLUMNS_OF_B}`,
    [options.limit, options.quietMs, options.tenants.only, options.tenants.except],
  );
  return rows.map(toBridge);
}

/**
 * Due bridges, at most `perAgent` of one (tenant, agent): the claim moves `next_poll_at` past the poll's own lease
 * and counts the poll in `polls`; the schedule proper is written when the poll ends.
 */
export async function claimDuePolls(db: Queryable, options: { limit: number; leaseMs: number; perAgent: number; tenants: BridgeTenants }): Promise<BridgeRecord[]> {
  const { rows } = await db.query(
    `WITH picked AS (
       SELECT id FROM a2a_bridge WHERE id IN (
         -- At most PER_AGENT_CLAIM due bridges of one (tenant, agent) per claim: one busy agent neither takes the
         -- whole batch nor gets a burst of GetTasks (its breaker and the backoff bound the rest).
         SELECT id FROM (
           SELECT id, next_poll_at, row_number() OVER (PARTITION BY org_id, agent_key ORDER BY next_poll_at, id) AS nth
           FROM a2a_bridge
           WHERE next_poll_at IS NOT NULL AND status IN ('dispatched', 'working') AND next_poll_at <= now() AND foreign_task_id IS NOT NULL
             AND ${tenantSqlClause("org_id", 3)}) due
         WHERE nth <= $5 ORDER BY next_poll_at LIMIT $1)
       ORDER BY next_poll_at FOR UPDATE SKIP LOCKED)
     UPDATE a2a_bridge b SET next_poll_at = now() + make_interval(secs => $2::double precision / 1000), polls = b.polls + 1
     FROM picked WHERE b.id = picked.id RETURNING ${BRIDGE_COLUMNS_OF_B}`,
    [options.limit, options.leaseMs, options.tenants.only, options.tenants.except, options.perAgent],
  );
  return rows.map(toBridge);
}

export async function uncountPoll(db: Queryable, bridgeId: string): Promise<void> {
  await db.query("UPDATE a2a_bridge SET polls = GREATEST(polls - 1, 0) WHERE id = $1 AND polls > 0", [bridgeId]);
}

/** A push asking for a GetTask now (next_poll_at moved back) wins over this schedule. */
export async function reschedulePoll(db: Queryable, bridgeId: string, backoffMs: number): Promise<void> {
  await db.query(
    `UPDATE a2a_bridge SET next_poll_at = CASE
         WHEN deadline_ms IS NOT NULL AND deadline_ms > extract(epoch FROM now()) * 1000
           THEN LEAST(now() + make_interval(secs => $2::double precision / 1000), to_timestamp(deadline_ms / 1000.0))
         ELSE now() + make_interval(secs => $2::double precision / 1000) END
     WHERE id = $1 AND status IN ('dispatched', 'working') AND next_poll_at > now()`,
    [bridgeId, backoffMs],
  );
}
