/**
 * The Postgres adapter of the reply rows (store/replies/reply-store.ts): `origin_replies` and `reply_buckets` as the
 * engine writes them (one statement per kind per batch), the listing a task view shows, and the row a caller's
 * outcome wait reads. A listing never carries the text, the connection's secret or anything of it.
 */
import type { ReplyRecord, ReplyState, ReplyUpdate } from "../../core/reply-types.js";
import type { ReplyOutcomeQuery } from "../../replies/redis-reply-outcome.js";
import type { Queryable } from "../db.js";
import { createPostgresReplyDialStore } from "./postgres-reply-dials.js";
import { completingSql, createPostgresReplyOutcomeFeed } from "./postgres-reply-feed.js";
import type { ReplyOutcomeRow, ReplyRowStore, ReplyStore, ReplyView } from "./reply-store.js";

export function createPostgresReplyRowStore(): ReplyRowStore {
  return { insert: insertReplies, settleParked: updateReplies, saveBuckets, list: listReplies, outcomeRow: readOutcomeRow };
}

/** Every reply storage operation, on Postgres. */
export function createPostgresReplyStore(): ReplyStore {
  return { ...createPostgresReplyRowStore(), ...createPostgresReplyDialStore(), ...createPostgresReplyOutcomeFeed() };
}

/** Inserts new rows; a redelivered request (same org, task and request id) inserts nothing. */
export async function insertReplies(db: Queryable, rows: readonly ReplyRecord[]): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO origin_replies (id, org_id, task_id, step_id, attempt, request_id, actor, idempotency_key, connection_id,
       state, approval_id, code, message, address_kind, address_display, text, text_sha256, next_attempt_at, finished_at)
     SELECT id, org_id, task_id, step_id, attempt, request_id, actor, idempotency_key, connection_id, state, approval_id,
       code, message, address_kind, address_display, text, text_sha256,
       CASE WHEN next_attempt_at_ms IS NULL THEN NULL ELSE to_timestamp(next_attempt_at_ms / 1000.0) END,
       CASE WHEN state = 'refused' THEN now() END
     FROM json_to_recordset($1::json) AS x(id uuid, org_id text, task_id uuid, step_id text, attempt integer,
       request_id text, actor text, idempotency_key text, connection_id uuid, state text, approval_id uuid, code text,
       message text, address_kind text, address_display text, text text, text_sha256 text, next_attempt_at_ms bigint)
     ON CONFLICT DO NOTHING`,
    [
      JSON.stringify(
        rows.map((r) => ({
          id: r.id,
          org_id: r.orgId,
          task_id: r.taskId,
          step_id: r.stepId,
          attempt: r.attempt,
          request_id: r.requestId,
          actor: r.actor,
          idempotency_key: r.idempotencyKey,
          connection_id: r.connectionId,
          state: r.state,
          approval_id: r.approvalId,
          code: r.code,
          message: r.message,
          address_kind: r.addressKind,
          address_display: r.addressDisplay,
          text: r.text,
          text_sha256: r.textSha256,
          next_attempt_at_ms: r.nextAttemptAtMs,
        })),
      ),
    ],
  );
}

/** Settles parked rows (approved → pending, denied → refused); a row no longer parked is left alone. */
export async function updateReplies(db: Queryable, updates: readonly ReplyUpdate[]): Promise<void> {
  if (updates.length === 0) return;
  await db.query(
    `UPDATE origin_replies r SET state = x.state, code = x.code, message = x.message,
       next_attempt_at = CASE WHEN x.next_attempt_at_ms IS NULL THEN NULL ELSE to_timestamp(x.next_attempt_at_ms / 1000.0) END,
       finished_at = CASE WHEN x.state = 'refused' THEN now() END,
       -- A refused reply's words are not kept.
       text = CASE WHEN x.state = 'refused' THEN '' ELSE r.text END,
       updated_at = now()
     FROM json_to_recordset($1::json) AS x(id uuid, org_id text, state text, code text, message text, next_attempt_at_ms bigint)
     WHERE r.id = x.id AND r.org_id = x.org_id AND r.state = 'parked'`,
    [JSON.stringify(updates.map((u) => ({ id: u.id, org_id: u.orgId, state: u.state, code: u.code, message: u.message, next_attempt_at_ms: u.nextAttemptAtMs })))],
  );
}

/** Writes each (tenant, actor) bucket's state after the batch took its tokens. */
export async function saveBuckets(db: Queryable, buckets: ReadonlyArray<{ orgId: string; actor: string; tokens: number; atMs: number }>): Promise<void> {
  if (buckets.length === 0) return;
  await db.query(
    `INSERT INTO reply_buckets (org_id, actor, tokens, updated_at)
     SELECT org_id, actor, tokens, to_timestamp(at_ms / 1000.0)
     FROM json_to_recordset($1::json) AS x(org_id text, actor text, tokens double precision, at_ms bigint)
     ON CONFLICT (org_id, actor) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at`,
    [JSON.stringify(buckets.map((b) => ({ org_id: b.orgId, actor: b.actor, tokens: b.tokens, at_ms: b.atMs })))],
  );
}

export async function listReplies(db: Queryable, orgId: string, taskId: string): Promise<ReplyView[]> {
  const { rows } = await db.query<{
    id: string;
    state: ReplyState;
    code: string | null;
    message: string | null;
    permalink: string | null;
    address_display: string | null;
    actor: string;
    step_id: string | null;
    created_at: Date;
    finished_at: Date | null;
  }>(
    `SELECT id, state, code, message, permalink, address_display, actor, step_id, created_at, finished_at
     FROM origin_replies WHERE org_id = $1 AND task_id = $2 ORDER BY created_at, id`,
    [orgId, taskId],
  );
  return rows.map((r) => ({
    id: r.id,
    state: r.state,
    code: r.code,
    message: r.message,
    permalink: r.permalink,
    addressDisplay: r.address_display,
    actor: r.actor,
    stepId: r.step_id,
    createdAt: r.created_at.toISOString(),
    finishedAt: r.finished_at ? r.finished_at.toISOString() : null,
  }));
}

/** The row the request made (or the first one with its key), whatever its state; undefined while there is none. */
export async function readOutcomeRow(db: Queryable, q: ReplyOutcomeQuery): Promise<ReplyOutcomeRow | undefined> {
  const { rows } = await db.query<ReplyOutcomeRow>(
    `SELECT id, state, code, message, permalink, approval_id, ${completingSql()} AS completing FROM origin_replies
     WHERE org_id = $1 AND task_id = $2 AND (request_id = $3 OR (idempotency_key = $4 AND state <> 'refused'))
     ORDER BY (request_id = $3) DESC LIMIT 1`,
    [q.orgId, q.taskId, q.requestId, q.idempotencyKey],
  );
  return rows[0];
}
