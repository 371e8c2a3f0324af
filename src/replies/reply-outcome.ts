/**
 * Waiting for a reply's outcome, for both callers (the harness's `ctx.reply` and the API's `TaskService.Reply`):
 * poll the row the request made — found by its request id, or by the idempotency key when an earlier request
 * with the same key made it — until it is terminal (sent, failed, unknown, refused) or parked on an approval.
 * The interval grows from 10 ms to 250 ms; at the deadline the answer is `unknown` / `outcome_pending` (the row
 * may still be sent: the caller must not post again, a repeat with the same key returns the recorded outcome).
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import { sleep } from "../sleep.js";
import type { Queryable } from "../store/db.js";
import type { ReplyOutcome, ReplyState } from "../core/reply-types.js";

export interface ReplyOutcomeQuery {
  orgId: string;
  taskId: string;
  requestId: string;
  idempotencyKey: string;
}

/** A database to read from: a pool (harness, scoped by `org_id` in the WHERE) or a per-read tenant transaction (API). */
export type ReplyOutcomeDb = Queryable | (<T>(read: (db: Queryable) => Promise<T>) => Promise<T>);

export interface WaitOptions {
  signal?: AbortSignal;
  /** Longest wait (ms), e.g. replyDeadlineMs(config). */
  deadlineMs: number;
  /** @defaultValue Date.now */
  clock?: () => number;
}

const FIRST_INTERVAL_MS = 10;
const MAX_INTERVAL_MS = 250;

interface Row {
  id: string;
  state: ReplyState;
  code: string | null;
  message: string | null;
  permalink: string | null;
  approval_id: string | null;
  /** `sent`, and its sender is still looking up the permalink (it holds the lease): not final for a caller yet. */
  completing: boolean;
}

/** The row the request made (or the first one with its key), whatever its state; undefined while there is none. */
async function readRow(db: ReplyOutcomeDb, q: ReplyOutcomeQuery): Promise<Row | undefined> {
  const read = (client: Queryable) =>
    client.query<Row>(
      `SELECT id, state, code, message, permalink, approval_id, (state = 'sent' AND claimed_until > now()) AS completing FROM origin_replies
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

function outcomeOf(row: Row): ReplyOutcome | undefined {
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
  const clock = options.clock ?? Date.now;
  const deadline = clock() + options.deadlineMs;
  let interval = FIRST_INTERVAL_MS;
  let replyId = "";
  for (;;) {
    if (options.signal?.aborted) throw new SwitchyardError(ErrorCode.Cancelled, "stopped waiting for the reply's outcome", { cause: options.signal.reason });
    const row = await readRow(db, q);
    const outcome = row && outcomeOf(row);
    if (outcome) return outcome;
    if (row) replyId = row.id;
    const left = deadline - clock();
    if (left <= 0) {
      return {
        status: "unknown",
        code: "outcome_pending",
        message: `no outcome within ${options.deadlineMs} ms; the reply may still be posted (a repeat with the same idempotency key returns it)`,
        replyId,
      };
    }
    await sleep(Math.min(interval, left), options.signal);
    interval = Math.min(MAX_INTERVAL_MS, interval * 2);
  }
}
