/**
 * The reply-outcome relay (issue 27 §3): a coordinator background job that copies origin_replies rows to Redis, so
 * a harness waiting in `ctx.reply` learns its outcome without database credentials (redis-reply-outcome.ts reads
 * it). Several coordinators may run it at once: every write carries the time of the read it came from, and a Lua
 * guard keeps the latest read's value, so their writes agree whatever order they land in.
 *
 * Why a poll and not a hook after each write: reply rows are written by seven statements (the engine's insert and
 * approval update, the sender's claim, outcome and permalink, its two sweeps), and a publish after a commit is
 * lost when the process dies in between. Every one of those writes sets `updated_at = now()` (reply-rows.ts, reply-store.ts), so
 * each poll reads the rows whose updated_at moved since the previous poll, and the watermark only moves once Redis
 * took every write: a crash or an outage means a later poll (here or in another coordinator) writes them again.
 *
 * `now()` is the writer's transaction start, not its commit, so each poll reads again `overlapMs` before the last
 * one: a writing transaction longer than that could be missed (its caller then answers `outcome_pending` at its
 * deadline, the documented "may still be posted"). The one change with no write is a `sent` row whose sender's
 * lease lapsed while it looked up the permalink; those rows are read by `claimed_until` (migration 0014).
 */
import { runScript, defineScript } from "../bus/lua/script.js";
import { assertKeyPrefix } from "../bus/keys.js";
import type { RedisClient } from "../bus/redis-connection.js";
import type { BackgroundJob } from "../foreign/a2a-foreign.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Queryable } from "../store/db.js";
import { replyOutcomeKeys, type PublishedReply } from "./redis-reply-outcome.js";
import { completingSql, outcomeOf, type ReplyOutcomeRow } from "./reply-outcome.js";

export interface ReplyOutcomeRelayOptions {
  /** A pool that reads every tenant's rows (the coordinator's, as the reply sender's). */
  pool: Queryable;
  /** The command connection. Must not use ioredis' `keyPrefix`. */
  redis: RedisClient;
  /** config.bus.keyPrefix: the harnesses read under the same prefix. */
  keyPrefix: string;
  /** How often the background job polls (ms): what it adds, at most, to a caller's wait. @defaultValue 100 */
  intervalMs?: number;
  /** How far before the previous poll each poll reads again (ms); see the module comment. @defaultValue 10 000 */
  overlapMs?: number;
  /**
   * How long a request's entry lives (ms). Its caller waits at most its deadline (replyDeadlineMs, 60 s by
   * default); this must be longer. @defaultValue 10 min
   */
  requestTtlMs?: number;
  /**
   * How long an idempotency key's entry lives (ms): a repeat of the key (a retried step posting the same words)
   * writes no row, so it finds the outcome only here. A repeat after this answers `outcome_pending`. @defaultValue 24 h
   */
  keyTtlMs?: number;
  /** How far back the first poll of a process reads (ms): rows settled while no relay ran. @defaultValue requestTtlMs */
  lookbackMs?: number;
  /** Rows read per query. @defaultValue 500 */
  pageSize?: number;
  logger?: Logger;
}

export interface ReplyOutcomeRelay {
  /** Reads the rows changed since the last run and publishes what changed; resolves with how many keys were written. One run at a time. */
  runOnce(signal?: AbortSignal): Promise<number>;
  /** runOnce every `intervalMs`, for the coordinator's background jobs. */
  job: BackgroundJob;
}

/**
 * KEYS: the keys of one row, all under one hash tag. ARGV[1]: the read time (`order`) of the values; then per key a
 * value and its TTL (ms). A key whose value came from a later read is left alone. Returns the keys written.
 */
const publishScript = defineScript(
  "reply-outcome-1",
  "variable",
  `
local order = tonumber(ARGV[1])
local written = 0
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  local later = false
  if current then
    local ok, seen = pcall(cjson.decode, current)
    later = ok and type(seen) == 'table' and type(seen.order) == 'number' and seen.order > order
  end
  if not later then
    redis.call('SET', KEYS[i], ARGV[2 * i], 'PX', ARGV[2 * i + 1])
    written = written + 1
  end
end
return written
`,
);

interface RelayRow extends ReplyOutcomeRow {
  org_id: string;
  task_id: string;
  request_id: string;
  idempotency_key: string;
  /** `updated_at::text`: the page cursor, at the database's precision. */
  cursor: string;
  /** This statement's now() in µs: the order of what it read. */
  read_us: number;
  /** The row holding this row's key now (this one unless it is refused), when the row is refused and once held it. */
  holder_id: string | null;
  holder_state: ReplyOutcomeRow["state"] | null;
  holder_code: string | null;
  holder_message: string | null;
  holder_permalink: string | null;
  holder_approval_id: string | null;
  holder_completing: boolean | null;
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

const NO_ID = "00000000-0000-0000-0000-000000000000";

export function createReplyOutcomeRelay(options: ReplyOutcomeRelayOptions): ReplyOutcomeRelay {
  assertKeyPrefix(options.keyPrefix);
  const logger = (options.logger ?? silentLogger).child({ component: "reply-outcome-relay" });
  const overlapMs = options.overlapMs ?? 10_000;
  const requestTtlMs = options.requestTtlMs ?? 10 * 60_000;
  const keyTtlMs = options.keyTtlMs ?? 24 * 60 * 60_000;
  const lookbackMs = options.lookbackMs ?? requestTtlMs;
  const pageSize = options.pageSize ?? 500;
  /** The previous run's read time (database text); undefined before the first run succeeded. */
  let since: string | undefined;
  /** Redis key → the value (less its order) this relay last wrote, for the rows the last run read: unchanged rows are not written again. */
  let written = new Map<string, string>();
  let running: Promise<number> | undefined;

  const publish = async (row: RelayRow, seen: Map<string, string>): Promise<number> => {
    const keys = replyOutcomeKeys(options.keyPrefix, { orgId: row.org_id, taskId: row.task_id, requestId: row.request_id, idempotencyKey: row.idempotency_key });
    const entries: Array<{ key: string; value: Omit<PublishedReply, "order">; ttlMs: number }> = [{ key: keys.request, value: valueOf(row), ttlMs: requestTtlMs }];
    if (row.state !== "refused") entries.push({ key: keys.key, value: valueOf(row), ttlMs: keyTtlMs });
    else if (row.approval_id !== null) {
      // It let go of its key: the key now answers with the row holding it, or with nobody (as readRow would).
      entries.push({ key: keys.key, value: row.holder_id === null ? {} : valueOf(holderOf(row)), ttlMs: row.holder_id === null ? requestTtlMs : keyTtlMs });
    }
    const changed = entries.filter((e) => {
      const text = JSON.stringify(e.value);
      const same = written.get(e.key) === text || seen.get(e.key) === text;
      seen.set(e.key, text);
      return !same;
    });
    if (changed.length === 0) return 0;
    // int8 arrives as a number once store/db.ts is loaded (its type parser); a string otherwise.
    const order = Number(row.read_us);
    const args = changed.flatMap((e) => [JSON.stringify({ order, ...e.value }), e.ttlMs]);
    return Number(await runScript(options.redis, publishScript, changed.map((e) => e.key), [order, ...args]));
  };

  const run = async (signal?: AbortSignal): Promise<number> => {
    const window = await options.pool.query<{ polled: string; start: string }>(
      `SELECT now()::text AS polled,
              (COALESCE($1::timestamptz, now() - make_interval(secs => $2::double precision / 1000)) - make_interval(secs => $3::double precision / 1000))::text AS start`,
      [since ?? null, lookbackMs, overlapMs],
    );
    const { polled, start } = window.rows[0]!;
    const seen = new Map<string, string>();
    let count = 0;
    const publishAll = async (rows: readonly RelayRow[]) => {
      for (const n of await Promise.all(rows.map((row) => publish(row, seen)))) count += n;
    };
    const lapsed = await options.pool.query<RelayRow>(
      `${SELECT_ROWS} WHERE r.state = 'sent' AND r.claimed_until > $1::timestamptz AND r.claimed_until <= now()`,
      [start],
    );
    await publishAll(lapsed.rows);
    let cursor = { at: start, id: NO_ID };
    for (;;) {
      if (signal?.aborted) return count; // the watermark stays: the next run reads these rows again
      const page = await options.pool.query<RelayRow>(
        `${SELECT_ROWS} WHERE (r.updated_at, r.id) > ($1::timestamptz, $2::uuid) ORDER BY r.updated_at, r.id LIMIT $3`,
        [cursor.at, cursor.id, pageSize],
      );
      await publishAll(page.rows);
      const last = page.rows.at(-1);
      if (!last || page.rows.length < pageSize) break;
      cursor = { at: last.cursor, id: last.id };
    }
    since = polled;
    written = seen;
    if (count > 0) logger.debug({ written: count }, "reply outcomes published");
    return count;
  };

  const runOnce = (signal?: AbortSignal): Promise<number> => {
    running ??= run(signal).finally(() => {
      running = undefined;
    });
    return running;
  };

  return { runOnce, job: { name: "reply-outcome-relay", intervalMs: options.intervalMs ?? 100, run: () => runOnce() } };
}

/** What a caller reading the key sees for this row: its outcome once final, else only that it exists. */
function valueOf(row: ReplyOutcomeRow): Omit<PublishedReply, "order"> {
  const outcome = outcomeOf(row);
  return outcome ? { replyId: row.id, outcome } : { replyId: row.id };
}

function holderOf(row: RelayRow): ReplyOutcomeRow {
  return {
    id: row.holder_id!,
    state: row.holder_state!,
    code: row.holder_code,
    message: row.holder_message,
    permalink: row.holder_permalink,
    approval_id: row.holder_approval_id,
    completing: row.holder_completing === true,
  };
}
