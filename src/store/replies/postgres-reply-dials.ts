/**
 * The Postgres adapter of the reply sender's rows (ReplyDialStore, store/replies/reply-store.ts): claiming due
 * `pending` rows, writing a dial's outcome, and the sweep of rows a crashed sender left `dialing`. Every outcome
 * write is guarded by `state = 'dialing'`, so an outcome lands once, and only on a row this sender still holds.
 *
 * States (migration 0006): pending → dialing → sent | failed | unknown, or back to pending (nothing was written: the
 * dial's preparation failed, the connection failed, a 429); pending too long → failed (`expired`). `dialing` whose lease passed means a sender died mid-request: `unknown`
 * (`interrupted`), never dialed again.
 */
import type { Queryable } from "../db.js";
import type { ClaimedReply, ClaimOptions, ReplyDialStore, ReplyFinish, SweptReply } from "./reply-store.js";

export function createPostgresReplyDialStore(): ReplyDialStore {
  return { claim: claimReplies, finish: finishReply, completeSent, limitConnection, learnIdentity, expireStale, sweepInterrupted, anyPending: anyPendingReply };
}

/**
 * Claims up to `limit` due pending rows for `leaseMs`; `FOR UPDATE SKIP LOCKED` lets several senders share them.
 *
 * At most one row per connection is claimed, and none of a connection that has a row `dialing` or is rate-limited
 * (`connections.rate_limited_until`): a provider's limits are per credential (GitHub asks for serial writes, Slack
 * limits per workspace), so a burst to one connection is dialed one after another, and after a 429 its other rows
 * wait for the provider's time instead of each taking a 429 and burning an attempt. Rows pending for longer than
 * `maxPendingMs` (since they last became pending) are left to the sweep, which expires them.
 */
export async function claimReplies(db: Queryable, options: ClaimOptions): Promise<ClaimedReply[]> {
  const { rows } = await db.query(
    `WITH due AS (
       SELECT DISTINCT ON (COALESCE(r.connection_id, r.id)) r.id
         FROM origin_replies r
        WHERE r.state = 'pending' AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= now())
          AND r.updated_at > now() - make_interval(secs => $3::double precision / 1000)
          AND NOT EXISTS (SELECT 1 FROM connections c WHERE c.id = r.connection_id AND c.rate_limited_until > now())
          AND NOT EXISTS (SELECT 1 FROM origin_replies d WHERE d.connection_id = r.connection_id AND d.state = 'dialing')
        ORDER BY COALESCE(r.connection_id, r.id), r.next_attempt_at NULLS FIRST, r.created_at),
     picked AS (
       SELECT id FROM origin_replies
        WHERE id IN (SELECT id FROM due) AND state = 'pending'
        ORDER BY next_attempt_at NULLS FIRST, created_at LIMIT $1 FOR UPDATE SKIP LOCKED)
     UPDATE origin_replies r
        SET state = 'dialing', dial_attempts = r.dial_attempts + 1, updated_at = now(),
            claimed_until = now() + make_interval(secs => $2::double precision / 1000)
       FROM picked WHERE r.id = picked.id
     RETURNING r.id, r.org_id, r.task_id, r.connection_id, r.text, r.dial_attempts,
       (SELECT t.reply_to FROM tasks t WHERE t.id = r.task_id) AS reply_to,
       (SELECT t.org_id FROM tasks t WHERE t.id = r.task_id) AS task_org_id`,
    [options.limit, options.leaseMs, options.maxPendingMs],
  );
  return rows.map((row) => ({
    id: row.id as string,
    orgId: row.org_id as string,
    taskId: row.task_id as string,
    connectionId: (row.connection_id as string | null) ?? null,
    text: row.text as string,
    dialAttempts: Number(row.dial_attempts),
    replyTo: row.reply_to as unknown,
    taskOrgId: (row.task_org_id as string | null) ?? null,
  }));
}

/**
 * Writes a dial's outcome; false when the row was no longer `dialing` (the sweep took it: nothing is written).
 * `completing`: a `sent` row keeps its lease while the sender still looks up its permalink (completeSent), so a
 * waiting caller gets the permalink with the outcome; echo suppression already sees the row as `sent`.
 */
export async function finishReply(db: Queryable, id: string, finish: ReplyFinish, completing = false): Promise<boolean> {
  const sent = finish.state === "sent";
  const { rowCount } = await db.query(
    `UPDATE origin_replies
        SET state = $2, code = $3, message = $4, provider_id = $5, permalink = $6, updated_at = now(),
            claimed_until = CASE WHEN $8::boolean THEN claimed_until END,
            next_attempt_at = CASE WHEN $2 = 'pending' THEN now() + make_interval(secs => $7::double precision / 1000) END,
            finished_at = CASE WHEN $2 = 'pending' THEN NULL ELSE now() END
      WHERE id = $1 AND state = 'dialing'`,
    [
      id,
      finish.state,
      sent ? null : finish.code,
      sent ? null : finish.message,
      sent ? finish.providerId : null,
      sent ? finish.permalink : null,
      finish.state === "pending" ? finish.delayMs : 0,
      sent && completing,
    ],
  );
  return rowCount === 1;
}

/** The permalink looked up after a `sent` row was written (null when the lookup failed), and the row's lease released. */
export async function completeSent(db: Queryable, id: string, permalink: string | null): Promise<void> {
  await db.query(
    "UPDATE origin_replies SET permalink = COALESCE($2, permalink), claimed_until = NULL, updated_at = now() WHERE id = $1 AND state = 'sent'",
    [id, permalink],
  );
}

/**
 * A connection the provider rate-limited: none of its rows is claimed before `delayMs` from now. A later limit
 * already recorded (another sender's 429) is kept.
 */
export async function limitConnection(db: Queryable, connectionId: string, delayMs: number): Promise<void> {
  await db.query(
    `UPDATE connections SET rate_limited_until = GREATEST(COALESCE(rate_limited_until, now()), now() + make_interval(secs => $2::double precision / 1000))
      WHERE id = $1`,
    [connectionId, delayMs],
  );
}

/**
 * `pending` rows that have waited longer than `maxPendingMs` since they last became pending (created, approved, or
 * put back after a retry) become `failed` / `expired`: a reply posted hours late (a coordinator without the
 * encryption key left it, a connection stayed rate-limited) would answer a conversation that has moved on. A live
 * row never gets there: its longest wait is a capped Retry-After or backoff.
 */
export async function expireStale(db: Queryable, maxPendingMs: number): Promise<SweptReply[]> {
  const { rows } = await db.query(
    `UPDATE origin_replies r
        SET state = 'failed', code = 'expired', next_attempt_at = NULL, updated_at = now(), finished_at = now(),
            message = 'the reply waited too long to be dialed (no encryption key, or its connection stayed rate-limited); it is not posted this late'
      WHERE r.state = 'pending' AND r.updated_at <= now() - make_interval(secs => $1::double precision / 1000)
     RETURNING r.id, r.org_id, r.task_id, (SELECT c.kind FROM connections c WHERE c.id = r.connection_id) AS kind`,
    [maxPendingMs],
  );
  return rows.map((row) => ({ id: row.id as string, orgId: row.org_id as string, taskId: row.task_id as string, kind: (row.kind as string | null) ?? "none" }));
}

/** Records the bot and app ids a Slack post taught us (echo suppression reads them); unchanged ids write nothing. */
export async function learnIdentity(db: Queryable, connectionId: string, botId: string | null, appId: string | null): Promise<void> {
  await db.query(
    `UPDATE connections SET bot_id = COALESCE($2, bot_id), app_id = COALESCE($3, app_id)
      WHERE id = $1 AND (bot_id IS DISTINCT FROM COALESCE($2, bot_id) OR app_id IS DISTINCT FROM COALESCE($3, app_id))`,
    [connectionId, botId, appId],
  );
}

/**
 * `dialing` rows whose lease passed: their sender died (or hung) mid-request, so the post may exist. They become
 * `unknown` (`interrupted`) and are never dialed again. Returns the swept rows with their connection kind.
 */
export async function sweepInterrupted(db: Queryable): Promise<SweptReply[]> {
  const { rows } = await db.query(
    `UPDATE origin_replies r
        SET state = 'unknown', code = 'interrupted', claimed_until = NULL, updated_at = now(), finished_at = now(),
            message = 'the sender stopped while dialing (crash or lease expired); the post may or may not exist, so it is not sent again'
      WHERE r.state = 'dialing' AND r.claimed_until < now()
     RETURNING r.id, r.org_id, r.task_id, (SELECT c.kind FROM connections c WHERE c.id = r.connection_id) AS kind`,
  );
  return rows.map((row) => ({ id: row.id as string, orgId: row.org_id as string, taskId: row.task_id as string, kind: (row.kind as string | null) ?? "none" }));
}

/** Whether any row is pending, whoever's. */
export async function anyPendingReply(db: Queryable): Promise<boolean> {
  const { rows } = await db.query("SELECT 1 FROM origin_replies WHERE state = 'pending' LIMIT 1");
  return rows.length > 0;
}
