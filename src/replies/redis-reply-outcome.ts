/**
 * Waiting for a reply's outcome without a database (issue 27 §3: workers hold no database credentials). The
 * coordinator's relay (reply-outcome-relay.ts) copies what the Postgres wait would read into two Redis keys per
 * reply row; this module is the harness's reader of them, the wire format both sides share, and the poll loop the
 * Postgres wait (reply-outcome.ts) uses too, so both answer alike, the deadline answer included. It must import
 * nothing of store/ (the harness imports it).
 *
 * Keys, under one hash tag per task so the two keys of a row (and the MGET that reads them) stay in one Redis
 * Cluster slot:
 *   `${keyPrefix}reply-outcome:{<orgId>:<taskId>}:req:<requestId>`        the row the request made
 *   `${keyPrefix}reply-outcome:{<orgId>:<taskId>}:key:<idempotencyKey>`   the row holding the key (never a refused one)
 * The value is a PublishedReply as JSON. Its `order` is the relay's read time: a relay that read the database
 * earlier never overwrites what a later read published (several coordinators run the relay).
 */
import { assertKeyPrefix } from "../bus/keys.js";
import type { RedisClient } from "../bus/redis-connection.js";
import type { ReplyOutcome } from "../core/reply-types.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { sleep } from "../sleep.js";

export interface ReplyOutcomeQuery {
  orgId: string;
  taskId: string;
  requestId: string;
  idempotencyKey: string;
}

export interface WaitOptions {
  signal?: AbortSignal;
  /** Longest wait (ms), e.g. replyDeadlineMs(config). */
  deadlineMs: number;
  /** @defaultValue Date.now */
  clock?: () => number;
}

/** One look at the reply: its outcome once final for a caller; else the row's id once there is a row. */
export interface ReplyOutcomeLook {
  outcome?: ReplyOutcome;
  replyId?: string;
}

const FIRST_INTERVAL_MS = 10;
const MAX_INTERVAL_MS = 250;

/**
 * Looks until the outcome is final, the interval growing from 10 ms to 250 ms. At the deadline the answer is
 * `unknown` / `outcome_pending` with the id of the row seen, if any: the reply may still be posted, so the caller
 * must not post again (a repeat with the same key returns the recorded outcome). Aborted: SwitchyardError Cancelled.
 */
export async function pollReplyOutcome(look: () => Promise<ReplyOutcomeLook>, options: WaitOptions): Promise<ReplyOutcome> {
  const clock = options.clock ?? Date.now;
  const deadline = clock() + options.deadlineMs;
  let interval = FIRST_INTERVAL_MS;
  let replyId = "";
  for (;;) {
    if (options.signal?.aborted) throw new SwitchyardError(ErrorCode.Cancelled, "stopped waiting for the reply's outcome", { cause: options.signal.reason });
    const seen = await look();
    if (seen.outcome) return seen.outcome;
    if (seen.replyId) replyId = seen.replyId;
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

/** What the relay writes under a key: no `replyId` means no row answers there now (a refused row let go of its key). */
export interface PublishedReply {
  /** The relay's database read time (µs since the epoch): a later read wins. */
  order: number;
  replyId?: string;
  /** Present once the row is final for a caller. */
  outcome?: ReplyOutcome;
}

export interface ReplyOutcomeKeys {
  request: string;
  key: string;
}

/** The two keys of a request (see the module comment). */
export function replyOutcomeKeys(keyPrefix: string, q: ReplyOutcomeQuery): ReplyOutcomeKeys {
  assertKeyPrefix(keyPrefix);
  // Whatever the ids hold, both keys of one task begin with the same text up to the first "}": one slot.
  const task = `${keyPrefix}reply-outcome:{${q.orgId}:${q.taskId}}`;
  return { request: `${task}:req:${q.requestId}`, key: `${task}:key:${q.idempotencyKey}` };
}

const STATUSES: ReadonlySet<string> = new Set(["sent", "failed", "unknown", "refused", "parked"]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function optionalString(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}

function outcomeFrom(value: unknown): ReplyOutcome | undefined {
  if (!isRecord(value) || typeof value.status !== "string" || !STATUSES.has(value.status) || typeof value.replyId !== "string") return undefined;
  if (![value.code, value.message, value.permalink, value.approvalId].every(optionalString)) return undefined;
  return value as unknown as ReplyOutcome;
}

/** A value read back; undefined when absent or not one of ours (then the wait goes on, to the deadline at worst). */
export function parsePublishedReply(raw: string | null | undefined): PublishedReply | undefined {
  if (typeof raw !== "string") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!isRecord(value) || typeof value.order !== "number" || !optionalString(value.replyId)) return undefined;
  const outcome = value.outcome === undefined ? undefined : outcomeFrom(value.outcome);
  if (value.outcome !== undefined && !outcome) return undefined;
  return { order: value.order, ...(typeof value.replyId === "string" ? { replyId: value.replyId } : {}), ...(outcome ? { outcome } : {}) };
}

/** What the relay has published for the request now: its own row first, else the row holding its key (as readRow in reply-outcome.ts). */
export async function readRedisReplyOutcome(redis: RedisClient, keyPrefix: string, q: ReplyOutcomeQuery): Promise<ReplyOutcomeLook> {
  const keys = replyOutcomeKeys(keyPrefix, q);
  const [byRequest, byKey] = (await redis.mget(keys.request, keys.key)).map(parsePublishedReply);
  const row = byRequest?.replyId ? byRequest : byKey?.replyId ? byKey : undefined;
  if (!row) return {};
  return { replyId: row.replyId!, ...(row.outcome ? { outcome: row.outcome } : {}) };
}

/** waitForReplyOutcome's contract (reply-outcome.ts), read from what the coordinators' relay publishes. */
export async function waitForRedisReplyOutcome(redis: RedisClient, keyPrefix: string, q: ReplyOutcomeQuery, options: WaitOptions): Promise<ReplyOutcome> {
  assertKeyPrefix(keyPrefix);
  return pollReplyOutcome(() => readRedisReplyOutcome(redis, keyPrefix, q), options);
}
