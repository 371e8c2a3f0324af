/**
 * The reply sender: dials the `origin_replies` rows the governed `reply` verb left `pending` (src/replies/ rows are
 * written, with their audit row, before any dial). Several coordinators share the rows: a row is claimed by moving
 * it to `dialing` with a lease (`FOR UPDATE SKIP LOCKED`), dialed outside any transaction, and its outcome written
 * with an UPDATE guarded by `state = 'dialing'`.
 *
 * Before a byte leaves, checked again (reply-dial.ts) whatever the verb checked (defence in depth): the task's
 * stored address validates; the connection exists and belongs to the row's tenant, which is the task's; its kind and
 * account key match the address exactly (else `address_mismatch`); the text fits the provider's limit. The
 * credential is opened only for the dial and goes only to the connection's API base URL, through the egress guard
 * (DNS pinned, no redirects, private addresses only with SWITCHYARD_EGRESS_ALLOWED_NETWORKS).
 *
 * Outcomes (dial-outcome.ts): 2xx → `sent`; a failure before the request was written (the preparation: loading the
 * connection, opening its secret, a database blip; or a connection that failed), or a 429 → `pending` again (after
 * Retry-After, capped, or a backoff) until `dialAttempts`, then `failed` (`connection_unusable`, `sender_error`,
 * `connect_failed`, `provider_rate_limited`); an egress refusal or a 4xx → `failed`; anything after the request may
 * have been written (timeout, reset, 5xx) → `unknown`, never dialed again. A 429 also holds the whole connection
 * (`rate_limited_until`): claimReplies dials none of its rows before then. A row pending longer than `maxPendingMs`
 * is expired by the sweep, never dialed.
 */
import type { DependencyHealth } from "../process/dependency-health.js";
import { countOriginReply, type Metrics } from "../metrics/metrics.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Pool } from "../store/db.js";
import type { SecretCipher } from "../vault/secret-cipher.js";
import type { BackgroundJob } from "../foreign/a2a-foreign.js";
import { redact, type DialOutcome } from "./dial-outcome.js";
import { dialProvider, prepareDial, type PreparedDial, type ReplyEgressOptions } from "./reply-dial.js";
import {
  claimReplies,
  completeSent,
  expireStale,
  finishReply,
  learnIdentity,
  limitConnection,
  sweepInterrupted,
  type ClaimedReply,
  type ReplyFinish,
} from "./reply-rows.js";

export interface ReplySenderOptions {
  pool: Pool;
  /** Opens connection secrets (AAD `connection:<id>`). */
  cipher: SecretCipher;
  egress?: ReplyEgressOptions;
  /** One provider request's deadline (config.origin.replyTimeoutMs). */
  timeoutMs: number;
  /** Dials of one reply before a failed connection or a 429 makes it `failed` (config.origin.replyDialAttempts). */
  dialAttempts: number;
  /** Backoff after a failed connection: base × 2^(dials − 1), at most 5 min. @defaultValue 1 000 */
  retryBaseMs?: number;
  /** Longest `Retry-After` honoured (ms); a longer one waits this long. @defaultValue 15 min */
  maxRetryAfterMs?: number;
  /**
   * A row pending longer than this since it last became pending (created, approved, put back) is `failed` /
   * `expired` by the sweep instead of being dialed: a reply posted hours late answers a moved-on conversation.
   * Longer than any capped Retry-After or backoff, so a live row never gets there. @defaultValue 1 h
   */
  maxPendingMs?: number;
  /** Rows dialed at once by one sender (at most one per connection). @defaultValue 8 */
  concurrency?: number;
  /** How long a claim holds off the sweep and other senders (ms). @defaultValue 2 × timeoutMs + 30 s */
  leaseMs?: number;
  /** How often the background job runs (ms). @defaultValue 1 000 */
  intervalMs?: number;
  /**
   * Checked right before each dial (e.g. REPLY_ENABLED switched off after the reply was governed): false fails the
   * row `reply_disabled` with no dial. @defaultValue always on
   */
  replyEnabled?: (orgId: string) => boolean;
  logger?: Logger;
  metrics?: Metrics;
  clock?: () => number;
  /** Where a kicked run that fails because Postgres is down is recorded (logged once per outage). */
  health?: DependencyHealth;
}

export interface ReplySender {
  /** Asks for a run now. Only in a process that runs the job (a coordinator): a short-lived CLI never starts a dial it would abandon. */
  kick(): void;
  /** Claims and dials every due pending row; resolves with how many were handled. One run at a time per sender. */
  runOnce(): Promise<number>;
  /** Marks `dialing` rows whose lease passed as `unknown` (`interrupted`) and expires stale `pending` rows; resolves with how many. */
  sweep(): Promise<number>;
  /** The periodic sweep and run, for the coordinator's background jobs. */
  job: BackgroundJob;
  /** Stops kicks and waits for the dials in flight (each bounded by the timeout). Idempotent. */
  close(): Promise<void>;
}

export function createReplySender(options: ReplySenderOptions): ReplySender {
  const logger = (options.logger ?? silentLogger).child({ component: "reply-sender" });
  const clock = options.clock ?? Date.now;
  const concurrency = options.concurrency ?? 8;
  const leaseMs = options.leaseMs ?? 2 * options.timeoutMs + 30_000;
  const retryBaseMs = options.retryBaseMs ?? 1_000;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 15 * 60_000;
  const maxPendingMs = options.maxPendingMs ?? 60 * 60_000;
  const retry: RetryPolicy = { retryBaseMs, maxRetryAfterMs, dialAttempts: options.dialAttempts };
  const egress = options.egress ?? {};
  let active = false;
  let closed = false;
  let running: Promise<number> | undefined;
  let again = false;

  const runOnce = (): Promise<number> => {
    if (closed) return Promise.resolve(0);
    active = true;
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let total = 0;
      try {
        do {
          again = false;
          for (;;) {
            const claimed = await claimReplies(options.pool, { limit: concurrency, leaseMs, maxPendingMs });
            if (claimed.length === 0) break;
            await Promise.all(claimed.map((reply) => dialOne(reply)));
            total += claimed.length;
            if (closed) break;
          }
        } while (again && !closed);
      } finally {
        running = undefined;
      }
      return total;
    })();
    return running;
  };

  const dialOne = async (reply: ClaimedReply): Promise<void> => {
    const log = logger.child({ replyId: reply.id, orgId: reply.orgId, taskId: reply.taskId, connectionId: reply.connectionId });
    let kind = "none";
    let secret = "";
    let finish: ReplyFinish;
    let permalinkLater: (() => Promise<string | null>) | undefined;
    let prepared: PreparedDial;
    try {
      prepared = await prepareDial(options, reply);
    } catch (error) {
      // Nothing was written yet (a database blip, a bug before the request): dialed again like a failed connection.
      prepared = { notReady: { code: "sender_error", message: `the dial could not be prepared: ${error instanceof Error ? error.message : String(error)}` } };
    }
    if ("refuse" in prepared) finish = { state: "failed", ...prepared.refuse };
    else if ("notReady" in prepared) finish = retryOrFail(retry, reply.dialAttempts, prepared.notReady.code, prepared.notReady.message);
    else {
      const { connection } = prepared;
      kind = connection.kind;
      secret = prepared.secret;
      try {
        const started = clock();
        const result = await dialProvider({ ...options, egress, clock, maxRetryAfterMs }, connection, prepared.address, prepared.secret, reply.text);
        options.metrics?.originReplyDialSeconds.observe({ kind }, Math.max(0, clock() - started) / 1000);
        if (result.outcome === "sent") {
          // Learnt before the row says `sent`: the echo Slack delivers at once is recognised by either.
          if (result.learnt && (result.learnt.botId || result.learnt.appId)) {
            await learnIdentity(options.pool, connection.id, result.learnt.botId ?? null, result.learnt.appId ?? null).catch((error: unknown) =>
              log.warn({ err: error }, "could not record the Slack bot identity"),
            );
          }
          permalinkLater = result.lookupPermalink;
        }
        if (result.outcome === "retry" && result.code === "provider_rate_limited") {
          // Before the row is put back: the connection's other rows must not be claimed in between.
          await limitConnection(options.pool, connection.id, retryDelay(retry, reply.dialAttempts, result.retryAfterMs)).catch((error: unknown) =>
            log.warn({ err: error }, "could not record the connection's rate limit"),
          );
        }
        finish = toFinish(retry, result, reply.dialAttempts);
      } catch (error) {
        // Our own failure (database, a bug) once the request may have been written: never again.
        finish = { state: "unknown", code: "sender_error", message: error instanceof Error ? error.message : String(error) };
      }
    }
    if (finish.state !== "sent") finish = { ...finish, message: redact(finish.message, secret) };
    const written = await finishReply(options.pool, reply.id, finish, permalinkLater !== undefined).catch((error: unknown) => {
      log.error({ err: error }, "could not record a reply's outcome; the sweep will mark it unknown after its lease");
      return false;
    });
    if (written && permalinkLater) {
      const link = await permalinkLater();
      await completeSent(options.pool, reply.id, link).catch((error: unknown) => log.warn({ err: error }, "could not record a reply's permalink"));
    }
    options.metrics?.originReplyDials.inc({ kind, outcome: finish.state === "pending" ? "retry" : finish.state });
    // Counted once, by whoever settles the row: an unwritten outcome is the sweep's (`interrupted`).
    if (written && finish.state !== "pending") countOriginReply(options.metrics, finish.state, finish.state === "sent" ? "" : finish.code);
    const fields = {
      state: finish.state,
      dialAttempts: reply.dialAttempts,
      ...(finish.state === "sent" ? { providerId: finish.providerId } : { code: finish.code, message: finish.message }),
      ...(finish.state === "pending" ? { retryInMs: finish.delayMs } : {}),
      ...(written ? {} : { recorded: false }),
    };
    if (finish.state === "sent" || finish.state === "pending") log.info(fields, "origin reply dialed");
    else log.warn(fields, "origin reply not sent");
  };

  const sweep = async (): Promise<number> => {
    const swept = await sweepInterrupted(options.pool);
    for (const row of swept) {
      options.metrics?.originReplyDials.inc({ kind: row.kind, outcome: "unknown" });
      countOriginReply(options.metrics, "unknown", "interrupted");
      logger.warn({ replyId: row.id, orgId: row.orgId, taskId: row.taskId }, "origin reply interrupted mid-dial; marked unknown, not sent again");
    }
    const expired = await expireStale(options.pool, maxPendingMs);
    for (const row of expired) {
      countOriginReply(options.metrics, "failed", "expired");
      logger.warn({ replyId: row.id, orgId: row.orgId, taskId: row.taskId, maxPendingMs }, "origin reply pending too long; failed expired, not sent");
    }
    return swept.length + expired.length;
  };

  return {
    kick() {
      if (!active || closed) return;
      setTimeout(
        () =>
          void runOnce().catch((error: unknown) => {
            // An outage is the process's DependencyHealth's to log (once); the periodic job runs the rows again.
            if (options.health?.absorb(error)) return;
            logger.error({ err: error }, "reply sender run failed");
          }),
        0,
      );
    },
    runOnce,
    sweep,
    job: {
      name: "origin-replies",
      intervalMs: options.intervalMs ?? 1_000,
      run: async () => {
        await sweep();
        return runOnce();
      },
    },
    async close() {
      closed = true;
      await running?.catch(() => undefined);
    },
  };
}

interface RetryPolicy {
  retryBaseMs: number;
  maxRetryAfterMs: number;
  /** Dials of one reply before it is `failed`. */
  dialAttempts: number;
}

function toFinish(policy: RetryPolicy, result: DialOutcome, dialAttempts: number): ReplyFinish {
  switch (result.outcome) {
    case "sent":
      return { state: "sent", providerId: result.providerId, permalink: result.permalink };
    case "failed":
    case "unknown":
      return { state: result.outcome, code: result.code, message: result.message };
    case "retry":
      return retryOrFail(policy, dialAttempts, result.code, result.message, result.retryAfterMs);
  }
}

/** The provider's Retry-After (capped), or base × 2^(dials − 1) up to 5 min. */
function retryDelay(policy: RetryPolicy, dialAttempts: number, retryAfter?: number): number {
  return Math.min(retryAfter ?? Math.min(policy.retryBaseMs * 2 ** (dialAttempts - 1), 5 * 60_000), policy.maxRetryAfterMs);
}

/** Nothing was written: pending again after a delay, or `failed` once the row used its dials. */
function retryOrFail(policy: RetryPolicy, dialAttempts: number, code: string, message: string, retryAfter?: number): ReplyFinish {
  if (dialAttempts >= policy.dialAttempts) return { state: "failed", code, message: `${message} (after ${dialAttempts} dials)` };
  return { state: "pending", code, message, delayMs: retryDelay(policy, dialAttempts, retryAfter) };
}
