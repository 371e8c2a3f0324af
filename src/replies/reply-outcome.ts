/**
 * Waiting for a reply's outcome, for both callers (the harness's `ctx.reply` and the API's `TaskService.Reply`):
 * poll the row the request made — found by its request id, or by the idempotency key when an earlier request
 * with the same key made it — until it is terminal (sent, failed, unknown, refused) or parked on an approval.
 * The poll loop and its deadline answer are pollReplyOutcome (redis-reply-outcome.ts), shared with the harness's
 * database-free wait; which rows are final for a caller is decided here, and the relay that feeds that wait
 * (reply-outcome-relay.ts) decides with the same `outcomeOf` (and its SQL with the same `completingSql`, store/replies/).
 */
import type { Queryable } from "../store/db.js";
import type { ReplyOutcome } from "../core/reply-types.js";
import type { ReplyOutcomeRow, ReplyRowStore } from "../store/replies/reply-store.js";
import { pollReplyOutcome, type ReplyOutcomeQuery, type WaitOptions } from "./redis-reply-outcome.js";

export type { ReplyOutcomeQuery, WaitOptions } from "./redis-reply-outcome.js";

/** A database to read from: a pool (harness, scoped by `org_id` in the WHERE) or a per-read tenant transaction (API). */
export type ReplyOutcomeDb = Queryable | (<T>(read: (db: Queryable) => Promise<T>) => Promise<T>);

/** Where the rows are read: the ReplyRowStore port (store/replies/postgres-reply-store.ts). */
export type ReplyOutcomeRows = Pick<ReplyRowStore, "outcomeRow">;

/** The row the request made (or the first one with its key), whatever its state; undefined while there is none. */
function readRow(store: ReplyOutcomeRows, db: ReplyOutcomeDb, q: ReplyOutcomeQuery): Promise<ReplyOutcomeRow | undefined> {
  const read = (client: Queryable) => store.outcomeRow(client, q);
  return typeof db === "function" ? db(read) : read(db);
}

/** The recorded outcome now, or undefined while there is no row yet or it is still pending / dialing. */
export async function readReplyOutcome(store: ReplyOutcomeRows, db: ReplyOutcomeDb, q: ReplyOutcomeQuery): Promise<ReplyOutcome | undefined> {
  const row = await readRow(store, db, q);
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

export async function waitForReplyOutcome(store: ReplyOutcomeRows, db: ReplyOutcomeDb, q: ReplyOutcomeQuery, options: WaitOptions): Promise<ReplyOutcome> {
  return pollReplyOutcome(async () => {
    const row = await readRow(store, db, q);
    if (!row) return {};
    const outcome = outcomeOf(row);
    return outcome ? { outcome } : { replyId: row.id };
  }, options);
}
