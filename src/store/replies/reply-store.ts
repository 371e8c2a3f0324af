/**
 * The storage port of origin replies (issue 27 §2): the rows of `origin_replies` and `reply_buckets` as the engine
 * writes them, the task view's listing, the reads a caller's outcome wait and the outcome relay poll, and the
 * reply sender's claims and outcome writes. The Postgres adapters sit beside it (postgres-reply-*.ts); the engine's
 * reply facts read under the task lock are `ReplyFactsSource` (store/engine/engine-store.ts).
 *
 * Every method takes the database first: the engine passes its batch transaction, the task service a tenant-scoped
 * one, the sender and relay their pool.
 */
import type { ReplyRecord, ReplyState, ReplyUpdate } from "../../core/reply-types.js";
import type { ReplyOutcomeQuery } from "../../replies/redis-reply-outcome.js";
import type { Queryable } from "../db.js";

/** A reply as a task view lists it: no text, no secret. */
export interface ReplyView {
  id: string;
  state: ReplyState;
  code: string | null;
  message: string | null;
  permalink: string | null;
  addressDisplay: string | null;
  actor: string;
  stepId: string | null;
  createdAt: string;
  finishedAt: string | null;
}

/** The columns of origin_replies that decide a caller's outcome. */
export interface ReplyOutcomeRow {
  id: string;
  state: ReplyState;
  code: string | null;
  message: string | null;
  permalink: string | null;
  approval_id: string | null;
  /** `sent`, and its sender still holds the lease while it looks up the permalink: not final for a caller yet. */
  completing: boolean;
}

/** What the engine writes in its batch's transaction (one statement per kind per batch), and what callers read. */
export interface ReplyRowStore {
  /** Inserts new rows; a redelivered request (same org, task and request id) inserts nothing. */
  insert(tx: Queryable, rows: readonly ReplyRecord[]): Promise<void>;
  /** Settles parked rows (approved → pending, denied → refused); a row no longer parked is left alone. */
  settleParked(tx: Queryable, updates: readonly ReplyUpdate[]): Promise<void>;
  /** Writes each (tenant, actor) bucket's state after the batch took its tokens. */
  saveBuckets(tx: Queryable, buckets: ReadonlyArray<{ orgId: string; actor: string; tokens: number; atMs: number }>): Promise<void>;
  /** A task's replies in creation order, as its view lists them. */
  list(db: Queryable, orgId: string, taskId: string): Promise<ReplyView[]>;
  /** The row a request made (or the first one with its key), whatever its state; undefined while there is none. */
  outcomeRow(db: Queryable, query: ReplyOutcomeQuery): Promise<ReplyOutcomeRow | undefined>;
}

export interface ClaimedReply {
  id: string;
  orgId: string;
  taskId: string;
  connectionId: string | null;
  text: string;
  /** Dials so far, this one included. */
  dialAttempts: number;
  /** The task's stored reply address (unvalidated here), and the task's tenant. */
  replyTo: unknown;
  taskOrgId: string | null;
}

export interface ClaimOptions {
  limit: number;
  leaseMs: number;
  /** Rows pending longer than this are the sweep's to expire, never dialed (ms). */
  maxPendingMs: number;
}

export type ReplyFinish =
  | { state: "sent"; providerId: string; permalink: string | null }
  | { state: "failed" | "unknown"; code: string; message: string }
  /** Back to pending, dialed again after `delayMs`. */
  | { state: "pending"; code: string; message: string; delayMs: number };

/** A row a sweep settled, with its connection's kind (`none` without one). */
export interface SweptReply {
  id: string;
  orgId: string;
  taskId: string;
  kind: string;
}

/**
 * The reply sender's rows (states: migration 0006). Every outcome write is guarded by `state = 'dialing'`, so an
 * outcome lands once, and only on a row this sender still holds.
 */
export interface ReplyDialStore {
  /** Claims up to `limit` due pending rows for `leaseMs` (at most one per connection; none of a busy or rate-limited one). */
  claim(db: Queryable, options: ClaimOptions): Promise<ClaimedReply[]>;
  /** Writes a dial's outcome; false when the row was no longer `dialing`. `completing`: a `sent` row keeps its lease. */
  finish(db: Queryable, id: string, finish: ReplyFinish, completing?: boolean): Promise<boolean>;
  /** The permalink looked up after a `sent` row was written (null when the lookup failed); the lease is released. */
  completeSent(db: Queryable, id: string, permalink: string | null): Promise<void>;
  /** None of the connection's rows is claimed before `delayMs` from now (a later limit already recorded is kept). */
  limitConnection(db: Queryable, connectionId: string, delayMs: number): Promise<void>;
  /** Records the bot and app ids a Slack post taught us (echo suppression reads them). */
  learnIdentity(db: Queryable, connectionId: string, botId: string | null, appId: string | null): Promise<void>;
  /** `pending` rows waiting longer than `maxPendingMs` become `failed` / `expired`. */
  expireStale(db: Queryable, maxPendingMs: number): Promise<SweptReply[]>;
  /** `dialing` rows whose lease passed become `unknown` / `interrupted`, never dialed again. */
  sweepInterrupted(db: Queryable): Promise<SweptReply[]>;
  /** Whether any row is pending (a runtime that cannot dial says once why they wait). */
  anyPending(db: Queryable): Promise<boolean>;
}

/** A row as the outcome relay reads it, with the row holding its idempotency key when it let go of it. */
export interface ReplyFeedRow extends ReplyOutcomeRow {
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

/** What the reply-outcome relay polls (replies/reply-outcome-relay.ts). */
export interface ReplyOutcomeFeed {
  /** The database's now (`polled`) and where this poll starts reading: `overlapMs` before `since` (or `lookbackMs` before now). */
  window(db: Queryable, since: string | undefined, lookbackMs: number, overlapMs: number): Promise<{ polled: string; start: string }>;
  /** `sent` rows whose lease lapsed after `start` with no write. */
  lapsed(db: Queryable, start: string): Promise<ReplyFeedRow[]>;
  /** Rows changed after the cursor, in (updated_at, id) order. */
  changed(db: Queryable, after: { at: string; id: string }, limit: number): Promise<ReplyFeedRow[]>;
}

/** Every reply storage operation. */
export interface ReplyStore extends ReplyRowStore, ReplyDialStore, ReplyOutcomeFeed {}
