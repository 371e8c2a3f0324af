/**
 * The Postgres adapter of what the reply-outcome relay polls (ReplyOutcomeFeed, store/replies/reply-store.ts): the
 * poll's window, the `sent` rows whose lease lapsed with no write, and the rows changed since a cursor, each with
 * the row now holding its idempotency key. Why a poll, and its overlap: replies/reply-outcome-relay.ts.
 */
import type { Queryable } from "../db.js";
import type { ReplyFeedRow, ReplyOutcomeFeed } from "./reply-store.js";

export function createPostgresReplyOutcomeFeed(): ReplyOutcomeFeed {
  return { window: readWindow, lapsed: readLapsed, changed: readChanged };
}

/**
 * `sent`, and its sender still holds the lease while it looks up the permalink: not final for a caller yet. A
 * lease that lapses without a write (the lookup's write failed) makes the row final with nothing written.
 */
export function completingSql(alias?: string): string {
  const column = alias ? `${alias}.` : "";
  return `(${column}state = 'sent' AND ${column}claimed_until > now())`;
}

// The holder is looked up only for a refused row that was parked (the one way a refused row held a key): a row
// refused when it was made never held one, and the holder's own changes publish its key.
const SELECT_ROWS = `
  SELECT r.id, r.org_id, r.task_id, r.request_id, r.idempotency_key, r.state, r.code, r.message, r.permalink,
         r.approval_id, ${completingSql("r")} AS completing, r.updated_at::text AS cursor,
         (extract(epoch FROM now()) * 1000000)::bigint AS read_us,
         h.id AS holder_id, h.state AS holder_state, h.code AS holder_code, h.message AS holder_message,
         h.permalink AS holder_permalink, h.approval_id AS holder_approval_id, h.completing AS holder_completing
    FROM origin_replies r
    LEFT JOIN LATERAL (
      SELECT x.id, x.state, x.code, x.message, x.permalink, x.approval_id, ${completingSql("x")} AS completing
        FROM origin_replies x
       WHERE r.state = 'refused' AND r.approval_id IS NOT NULL
         AND x.org_id = r.org_id AND x.task_id = r.task_id AND x.idempotency_key = r.idempotency_key AND x.state <> 'refused'
    ) h ON true`;

export async function readWindow(db: Queryable, since: string | undefined, lookbackMs: number, overlapMs: number): Promise<{ polled: string; start: string }> {
  const window = await db.query<{ polled: string; start: string }>(
    `SELECT now()::text AS polled,
            (COALESCE($1::timestamptz, now() - make_interval(secs => $2::double precision / 1000)) - make_interval(secs => $3::double precision / 1000))::text AS start`,
    [since ?? null, lookbackMs, overlapMs],
  );
  return window.rows[0]!;
}

export async function readLapsed(db: Queryable, start: string): Promise<ReplyFeedRow[]> {
  const lapsed = await db.query<ReplyFeedRow>(`${SELECT_ROWS} WHERE r.state = 'sent' AND r.claimed_until > $1::timestamptz AND r.claimed_until <= now()`, [start]);
  return lapsed.rows;
}

export async function readChanged(db: Queryable, after: { at: string; id: string }, limit: number): Promise<ReplyFeedRow[]> {
  const page = await db.query<ReplyFeedRow>(`${SELECT_ROWS} WHERE (r.updated_at, r.id) > ($1::timestamptz, $2::uuid) ORDER BY r.updated_at, r.id LIMIT $3`, [
    after.at,
    after.id,
    limit,
  ]);
  return page.rows;
}
