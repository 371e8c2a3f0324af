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
 * (`rate_limited_until`): a claim takes none of its rows before then. A row pending longer than `maxPendingMs`
 * is expired by the sweep, never dialed.
 *
 * In parts: the runs that claim and dial batches (reply-runs.ts), one dial (reply-attempt.ts) and when it is tried
 * again (reply-retry.ts), its outcome recorded (reply-recording.ts), and the sweep (reply-sweep.ts).
 */
import type { DependencyHealth } from "../process/dependency-health.js";
import type { Metrics } from "../metrics/metrics.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Pool } from "../store/db.js";
import type { ClaimedReply, ReplyDialStore } from "../store/replies/reply-store.js";
import type { SecretCipher } from "../vault/secret-cipher.js";
import type { ConnectionStore } from "../store/vault/connection-store.js";
import type { BackgroundJob } from "../foreign/a2a-foreign.js";
import { dialReply, type DialContext } from "./reply-attempt.js";
import type { ReplyEgressOptions } from "./reply-dial.js";
import { recordDial } from "./reply-recording.js";
import { ReplyRuns } from "./reply-runs.js";
import { sweepReplies } from "./reply-sweep.js";

export interface ReplySenderOptions {
  pool: Pool;
  /** The rows it claims and settles (store/replies/postgres-reply-dials.ts), on `pool`. */
  store: ReplyDialStore;
  /** The connections port (`runtime.stores.connections`): what a dial reads of its connection, on `pool`. */
  connections: Pick<ConnectionStore, "find" | "sealedSecret">;
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
  const concurrency = options.concurrency ?? 8;
  const leaseMs = options.leaseMs ?? 2 * options.timeoutMs + 30_000;
  const maxPendingMs = options.maxPendingMs ?? 60 * 60_000;
  const context: DialContext = {
    options,
    egress: options.egress ?? {},
    clock: options.clock ?? Date.now,
    retry: { retryBaseMs: options.retryBaseMs ?? 1_000, maxRetryAfterMs: options.maxRetryAfterMs ?? 15 * 60_000, dialAttempts: options.dialAttempts },
  };

  const dialOne = async (reply: ClaimedReply): Promise<void> => {
    const log = logger.child({ replyId: reply.id, orgId: reply.orgId, taskId: reply.taskId, connectionId: reply.connectionId });
    await recordDial(options, reply, await dialReply(context, reply, log), log);
  };
  const runs = new ReplyRuns(() => options.store.claim(options.pool, { limit: concurrency, leaseMs, maxPendingMs }), dialOne, logger, options.health);
  const runOnce = (): Promise<number> => runs.runOnce();
  const sweep = (): Promise<number> => sweepReplies(options.store, options.pool, options.metrics, logger, maxPendingMs);

  return {
    kick() {
      runs.kick();
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
    close() {
      return runs.close();
    },
  };
}
