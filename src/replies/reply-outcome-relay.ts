/**
 * The reply-outcome relay (issue 27 §3): a coordinator background job that copies origin_replies rows to Redis, so
 * a harness waiting in `ctx.reply` learns its outcome without database credentials (redis-reply-outcome.ts reads
 * it). Several coordinators may run it at once: every write carries the time of the read it came from, and a Lua
 * guard keeps the latest read's value, so their writes agree whatever order they land in.
 *
 * Why a poll and not a hook after each write: reply rows are written by seven statements (the engine's insert and
 * approval update, the sender's claim, outcome and permalink, its two sweeps), and a publish after a commit is
 * lost when the process dies in between. Every one of those writes sets `updated_at = now()` (store/replies/postgres-reply-*.ts), so
 * each poll reads the rows whose updated_at moved since the previous poll, and the watermark only moves once Redis
 * took every write: a crash or an outage means a later poll (here or in another coordinator) writes them again.
 *
 * `now()` is the writer's transaction start, not its commit, so each poll reads again `overlapMs` before the last
 * one: a writing transaction longer than that could be missed (its caller then answers `outcome_pending` at its
 * deadline, the documented "may still be posted"). The one change with no write is a `sent` row whose sender's
 * lease lapsed while it looked up the permalink; those rows are read by `claimed_until` (migration 0014). The SQL is
 * the ReplyOutcomeFeed port's (store/replies/postgres-reply-feed.ts).
 */
import { runScript, defineScript } from "../bus/lua/script.js";
import { assertKeyPrefix } from "../bus/keys.js";
import type { RedisClient } from "../bus/redis-connection.js";
import type { BackgroundJob } from "../foreign/a2a-foreign.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Queryable } from "../store/db.js";
import type { ReplyFeedRow, ReplyOutcomeFeed, ReplyOutcomeRow } from "../store/replies/reply-store.js";
import { replyOutcomeKeys, type PublishedReply } from "./redis-reply-outcome.js";
import { outcomeOf } from "./reply-outcome.js";

export interface ReplyOutcomeRelayOptions {
  /** A pool that reads every tenant's rows (the coordinator's, as the reply sender's). */
  pool: Queryable;
  /** Where the rows are read (store/replies/postgres-reply-feed.ts). */
  store: ReplyOutcomeFeed;
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

  const publish = async (row: ReplyFeedRow, seen: Map<string, string>): Promise<number> => {
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
    const { polled, start } = await options.store.window(options.pool, since, lookbackMs, overlapMs);
    const seen = new Map<string, string>();
    let count = 0;
    const publishAll = async (rows: readonly ReplyFeedRow[]) => {
      for (const n of await Promise.all(rows.map((row) => publish(row, seen)))) count += n;
    };
    await publishAll(await options.store.lapsed(options.pool, start));
    let cursor = { at: start, id: NO_ID };
    for (;;) {
      if (signal?.aborted) return count; // the watermark stays: the next run reads these rows again
      const page = await options.store.changed(options.pool, cursor, pageSize);
      await publishAll(page);
      const last = page.at(-1);
      if (!last || page.length < pageSize) break;
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

function holderOf(row: ReplyFeedRow): ReplyOutcomeRow {
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
