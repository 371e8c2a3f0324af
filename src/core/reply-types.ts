/**
 * The vocabulary of origin replies (issue 9) shared by the coordinator's decision, the engine that persists it,
 * the API and the harness. Types and constants only.
 *
 * - **reply row** (`origin_replies`): one attempt to post words to a task's reply address, written with its audit
 *   row BEFORE any dial. `refused` rows record refusals; `parked` waits for an approval; `pending` waits for the
 *   sender (src/replies/sender, helper C2), which moves it to `dialing` and then `sent` / `failed` / `unknown`.
 * - **request id**: how a caller finds the row its request made (the worker's CONTROL envelope id, or the API
 *   call's id); **idempotency key**: a repeat with the same key finds the first non-refused row and posts nothing.
 */

export type ReplyState = "parked" | "pending" | "dialing" | "sent" | "failed" | "unknown" | "refused";

/** Refusals decided before any dial, in the order they are checked. */
export type ReplyRefusalCode =
  /** The step's own worker asked at the wrong time: a stale attempt, the step not in flight, the grace window over. */
  | "reply_not_allowed"
  | "reply_disabled"
  | "no_reply_address"
  | "text_too_long"
  | "task_cap_reached"
  | "no_connection"
  | "target_not_allowed"
  | "secret_detected"
  | "rate_limited"
  | "policy_denied"
  | "approval_denied"
  | "approval_expired";

/** What a caller of `ctx.reply` / `TaskService.Reply` gets back. */
export interface ReplyOutcome {
  /** `parked`: the tenant's policy requires an approval; the reply is posted once approved. */
  status: "sent" | "failed" | "unknown" | "refused" | "parked";
  code?: string;
  message?: string;
  permalink?: string;
  replyId: string;
  approvalId?: string;
}

/** Bounds of replies (from config.origin). */
export interface ReplyLimits {
  /** After a task ended, how long its last worker (or the tenant) may still reply (ms). */
  graceMs: number;
  /** Non-refused replies per task, ever. */
  taskCap: number;
  /** Token bucket per (tenant, actor). */
  ratePerMinute: number;
  burst: number;
  /** Cost accrued per allowed reply. */
  cost: number;
  /** Longest text, in UTF-8 bytes. */
  maxTextBytes: number;
}

export const MAX_REPLY_TEXT_BYTES = 16 * 1024;

export const DEFAULT_REPLY_LIMITS: ReplyLimits = {
  graceMs: 15 * 60_000,
  taskCap: 20,
  ratePerMinute: 30,
  burst: 10,
  cost: 0,
  maxTextBytes: MAX_REPLY_TEXT_BYTES,
};

/** A new reply row as decided; `text` is stored so a pending row can be sent after a crash, and nowhere else. */
export interface ReplyRecord {
  id: string;
  orgId: string;
  taskId: string;
  stepId: string | null;
  attempt: number | null;
  requestId: string;
  actor: string;
  idempotencyKey: string;
  connectionId: string | null;
  state: "refused" | "parked" | "pending";
  approvalId: string | null;
  code: ReplyRefusalCode | null;
  message: string | null;
  addressKind: string | null;
  addressDisplay: string | null;
  text: string;
  textSha256: string;
  /** When a pending row may be dialed (ms). */
  nextAttemptAtMs: number | null;
}

/** A parked row decided by its approval. */
export interface ReplyUpdate {
  id: string;
  orgId: string;
  state: "pending" | "refused";
  code: ReplyRefusalCode | null;
  message: string | null;
  nextAttemptAtMs: number | null;
}

/** Where a reply may be posted with which credential (the vault's `selectConnection`, src/vault/connection-select.ts). */
export type ConnectionSelection =
  | { ok: true; connection: { id: string; kind: string; accountKey: string } }
  | { ok: false; code: "no_connection" | "target_not_allowed"; message: string };

/** A reply token bucket as stored: tokens at `updatedAtMs`. */
export interface BucketState {
  tokens: number;
  updatedAtMs: number;
}

/** Facts the shell gathers for a `reply_request` under the task lock, before the pure decision. */
export interface ReplyRequestFacts {
  kind: "request";
  /** Non-refused rows the task has recorded. */
  recordedCount: number;
  /** A non-refused row with this idempotency key exists: the request is ignored (the caller finds that row). */
  duplicate: boolean;
  /** Undefined when the task has no address (nothing to select). */
  connection: ConnectionSelection | undefined;
  /** The id of the first secret rule the text matches; never the match. */
  secretRule: string | null;
  /** The (tenant, actor) bucket; null when it was never used (full). */
  bucket: BucketState | null;
}

/** A parked reply row, gathered for an `approval_decided` naming its approval. */
export interface ParkedReplyFacts {
  kind: "approval";
  reply: {
    id: string;
    state: ReplyState;
    stepId: string | null;
    actor: string;
    connectionId: string | null;
    addressDisplay: string | null;
    textSha256: string;
  };
}

export type ReplyEventFacts = ReplyRequestFacts | ParkedReplyFacts;
