/**
 * Waiting for a reply's outcome, for both callers (the harness's `ctx.reply` and the API's `TaskService.Reply`):
 * poll the row the request made — found by its request id, or by the idempotency key when an earlier request
 * with the same key made it — until it is terminal (sent, failed, unknown, refused) or parked on an approval.
 * The poll loop and its deadline answer are pollReplyOutcome (redis-reply-outcome.ts), shared with the harness's
 * database-free wait; which rows are final for a caller is decided here, and the relay that feeds that wait
 * (reply-outcome-relay.ts) decides with the same `outcomeOf` and `completingSql`.
 */
import type { Queryable } from "../store/db.js";
import type { ReplyOutcome, ReplyState } from "../core/reply-types.js";
import { pollReplyOutcome, type ReplyOutcomeQuery, type WaitOptions } from "./redis-reply-outcome.js";

export type { ReplyOutcomeQuery, WaitOptions } from "./redis-reply-outcome.js";

/** A database to read from: a pool (harness, scoped by `org_id` in the WHERE) or a per-read tenant transaction (API). */
export type ReplyOutcomeDb = Queryable | (<T>(read: (db: Queryable) => Promise<T>) => Promise<T>);

/**
 * `sent`, and its sender still holds the lease while it looks up the permalink: not final for a caller yet. A
 * lease that lapses without a write (the lookup's write failed) makes the row final with nothing written.
 */
export function completingSql(alias?: string): string {
  const column = alias ? `${alias}.` : "";
  return `(${column}state = 'sent' AND ${column}claimed_until > now())`;
}

/** The columns of origin_replies that decide a caller's outcome. */
export interface ReplyOutcomeRow {
  id: string;
  state: ReplyState;
  code: string | null;
  message: string | null;
  permalink: string | null;
  approval_id: string | null;
  /** completingSql(). */
  completing: boolean;
}

/** The row the request made (or the first one with its key), whatever its state; undefined while there is none. */
async function readRow(db: ReplyOutcomeDb, q: ReplyOutcomeQuery): Promise<ReplyOutcomeRow | undefined> {
  const read = (client: Queryable) =>
    client.query<ReplyOutcomeRow>(
      `SELECT id, state, code, message, permalink, approval_id, ${completingSql()} AS completing FROM origin_replies
       WHERE org_id = $1 AND task_id = $2 AND (request_id = $3 OR (idempotency_key = $4 AND state <> 'refused'))
       ORDER BY (request_id = $3) DESC LIMIT 1`,
      [q.orgId, q.taskId, q.requestId, q.idempotencyKey],
    );
  const { rows } = typeof db === "function" ? await db(read) : await read(db);
  return rows[0];
}

/** The recorded outcome now, or undefined while there is no row yet or it is still pending / dialing. */
export async function readReplyOutcome(db: ReplyOutcomeDb, q: ReplyOutcomeQuery): Promise<ReplyOutcome | undefined> {
  const row = await readRow(db, q);
  return row ? outcomeOf(row) : undefined;
}

/** The caller's outcome of a row, or undefined while it is not final for a caller (pending, dialing, completing). */
export function outcomeOf(row: ReplyOutcomeRow): ReplyOutcome | undefined {
  if (row.state === "pending" || row.state === "dialing" || row.completing === true) return undefined;
  return {
    status: row.state,
    replyId: row.id,
    ...(row.code ? { code: row.code } : {}),
    ...(row.message ? { message: row.message } : {}),
    ...(row.permalink ? { permalink: row.permalink } : {}),
    ...(row.approval_id ? { approvalId: row.approval_id } : {}),
  };
}

export async function waitForReplyOutcome(db: ReplyOutcomeDb, q: ReplyOutcomeQuery, options: WaitOptions): Promise<ReplyOutcome> {
  return pollReplyOutcome(async () => {
    const row = await readRow(db, q);
    if (!row) return {};
    const outcome = outcomeOf(row);
    return outcome ? { outcome } : { replyId: row.id };
  }, options);
}
