/**
 * The reply-outcome relay and the harness's database-free wait (issue 27 §3), on the real Postgres and Redis: rows
 * settled by the real writers (the sender's, the engine's approval update) reach `waitForRedisReplyOutcome` by
 * request id and by idempotency key; a refused row only by request id, and a denied parked row lets go of its key;
 * the deadline and abort answers are the Postgres wait's own.
 */
import { createHash, randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { parsePublishedReply, replyOutcomeKeys, waitForRedisReplyOutcome, type ReplyOutcomeQuery } from "../../src/replies/redis-reply-outcome.js";
import { waitForReplyOutcome } from "../../src/replies/reply-outcome.js";
import { createReplyOutcomeRelay, type ReplyOutcomeRelay, type ReplyOutcomeRelayOptions } from "../../src/replies/reply-outcome-relay.js";
import { completeSent, finishReply } from "../../src/store/replies/postgres-reply-dials.js";
import { createPostgresReplyStore, updateReplies } from "../../src/store/replies/postgres-reply-store.js";
import type { Pool } from "../../src/store/db.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";
import { insertTask, newTenant } from "./sender-support.js";

const store = createPostgresReplyStore();

interface RowInit {
  org: string;
  taskId: string;
  state: string;
  requestId?: string;
  key?: string;
  approvalId?: string | null;
  code?: string | null;
  /** SQL for claimed_until / updated_at (default NULL / now()). */
  claimedUntilSql?: string;
  updatedAtSql?: string;
}

/** A reply row as the engine's insert leaves it; returns its id and the query of the request that made it. */
async function insertRow(pool: Pool, r: RowInit): Promise<{ id: string; query: ReplyOutcomeQuery }> {
  const id = randomUUID();
  const requestId = r.requestId ?? `req-${id}`;
  const key = r.key ?? `key-${id}`;
  await pool.query(
    `INSERT INTO origin_replies (id, org_id, task_id, request_id, actor, idempotency_key, state, approval_id, code, text, text_sha256, claimed_until, updated_at)
     VALUES ($1, $2, $3, $4, 'worker:role:answerer', $5, $6, $7, $8, 'words', $9, ${r.claimedUntilSql ?? "NULL"}, ${r.updatedAtSql ?? "now()"})`,
    [id, r.org, r.taskId, requestId, key, r.state, r.approvalId ?? null, r.code ?? null, createHash("sha256").update("words").digest("hex")],
  );
  return { id, query: { orgId: r.org, taskId: r.taskId, requestId, idempotencyKey: key } };
}

describe("reply-outcome relay → waitForRedisReplyOutcome", () => {
  let db: TestDatabase;
  let t: TestRedis;
  let org: string;
  let taskId: string;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });
  beforeEach(async () => {
    t = await createTestRedis();
    // Each relay reads every tenant's rows: an earlier test's would count in this one's.
    await db.pool.query("DELETE FROM origin_replies");
    org = await newTenant(db.pool);
    taskId = await insertTask(db.pool, org, null);
  });
  afterEach(async () => {
    await t.cleanup();
  });

  const relayOf = (options: Partial<ReplyOutcomeRelayOptions> = {}): ReplyOutcomeRelay =>
    createReplyOutcomeRelay({ pool: db.pool, store, redis: t.redis, keyPrefix: t.prefix, ...options });
  const wait = (q: ReplyOutcomeQuery, deadlineMs = 10_000, signal?: AbortSignal) =>
    waitForRedisReplyOutcome(t.redis, t.prefix, q, { deadlineMs, ...(signal ? { signal } : {}) });
  /** Runs the relay every 20 ms (as its job would) while `body` runs. */
  const relaying = async <T>(relay: ReplyOutcomeRelay, body: () => Promise<T>): Promise<T> => {
    let on = true;
    const loop = (async () => {
      while (on) {
        await relay.runOnce();
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      return await body();
    } finally {
      on = false;
      await loop;
    }
  };

  it("a reply the sender settles reaches the waiting harness by request id, and a second request by its key", async () => {
    const relay = relayOf();
    const { id, query } = await insertRow(db.pool, { org, taskId, state: "dialing", claimedUntilSql: "now() + interval '1 minute'" });
    await relay.runOnce();
    // While dialing, the row is seen (its id) but nothing is final: a short wait answers the pending outcome with it.
    expect(await wait(query, 50)).toMatchObject({ status: "unknown", code: "outcome_pending", replyId: id });

    const waiting = wait(query);
    expect(await finishReply(db.pool, id, { state: "sent", providerId: "42", permalink: "https://github.com/acme/app/issues/7#c42" })).toBe(true);
    expect(await relaying(relay, () => waiting)).toEqual({ status: "sent", replyId: id, permalink: "https://github.com/acme/app/issues/7#c42" });

    // A retried step posting the same words: a new request id, the same key, no row of its own.
    const repeat = { ...query, requestId: randomUUID() };
    expect(await wait(repeat, 1_000)).toEqual({ status: "sent", replyId: id, permalink: "https://github.com/acme/app/issues/7#c42" });
    // The Postgres wait answers the same for both.
    expect(await waitForReplyOutcome(store, db.pool, repeat, { deadlineMs: 1_000 })).toEqual(await wait(repeat, 1_000));
  });

  it("a sent row is final only once its permalink is looked up (or its lease lapses with nothing written)", async () => {
    const relay = relayOf();
    const { id, query } = await insertRow(db.pool, { org, taskId, state: "dialing", claimedUntilSql: "now() + interval '1 minute'" });
    await finishReply(db.pool, id, { state: "sent", providerId: "7", permalink: null }, true);
    await relay.runOnce();
    expect(await wait(query, 50)).toMatchObject({ status: "unknown", code: "outcome_pending", replyId: id });
    await completeSent(db.pool, id, "https://example.test/p/7");
    await relay.runOnce();
    expect(await wait(query, 50)).toEqual({ status: "sent", replyId: id, permalink: "https://example.test/p/7" });

    // Written an hour ago, outside any poll's window, its lease just lapsed: read by claimed_until.
    const lapsed = await insertRow(db.pool, { org, taskId, state: "sent", claimedUntilSql: "now() - interval '1 second'", updatedAtSql: "now() - interval '1 hour'" });
    await relayOf().runOnce();
    expect(await wait(lapsed.query, 50)).toEqual({ status: "sent", replyId: lapsed.id });
  });

  it("a refused row answers its request id only; its key answers nothing", async () => {
    const relay = relayOf();
    const { id, query } = await insertRow(db.pool, { org, taskId, state: "refused", code: "no_reply_address" });
    await relay.runOnce();
    expect(await wait(query, 1_000)).toEqual({ status: "refused", replyId: id, code: "no_reply_address" });
    const other = { ...query, requestId: randomUUID() };
    const pending = await wait(other, 100);
    expect(pending).toMatchObject({ status: "unknown", code: "outcome_pending", replyId: "" });
    expect(pending).toEqual(await waitForReplyOutcome(store, db.pool, other, { deadlineMs: 100 }));
    expect(await t.redis.exists(replyOutcomeKeys(t.prefix, query).key)).toBe(0);

    // A stale attempt repeats a key another row holds: its own refused row answers it, not the holder.
    const holder = await insertRow(db.pool, { org, taskId, state: "sent", key: "shared" });
    const stale = await insertRow(db.pool, { org, taskId, state: "refused", code: "reply_not_allowed", key: "shared" });
    await relay.runOnce();
    expect(await wait(stale.query, 1_000)).toEqual({ status: "refused", replyId: stale.id, code: "reply_not_allowed" });
    expect(await waitForReplyOutcome(store, db.pool, stale.query, { deadlineMs: 1_000 })).toEqual(await wait(stale.query, 1_000));
    expect(await wait({ ...stale.query, requestId: randomUUID() }, 1_000)).toEqual({ status: "sent", replyId: holder.id });
  });

  it("a parked reply answers by its key until denied; then the key answers the next row that holds it", async () => {
    const relay = relayOf();
    const approvalId = randomUUID();
    const parked = await insertRow(db.pool, { org, taskId, state: "parked", approvalId, key: "answer-1" });
    await relay.runOnce();
    const repeat = { ...parked.query, requestId: randomUUID() };
    expect(await wait(repeat, 1_000)).toEqual({ status: "parked", replyId: parked.id, approvalId });

    await updateReplies(db.pool, [{ id: parked.id, orgId: org, state: "refused", code: "policy_denied", message: "denied", nextAttemptAtMs: null }]);
    await relay.runOnce();
    expect(await wait(parked.query, 1_000)).toEqual({ status: "refused", replyId: parked.id, approvalId, code: "policy_denied", message: "denied" });
    expect(await wait(repeat, 100)).toMatchObject({ status: "unknown", code: "outcome_pending", replyId: "" });

    const next = await insertRow(db.pool, { org, taskId, state: "failed", code: "provider_rejected", key: "answer-1" });
    await relay.runOnce();
    expect(await wait(repeat, 1_000)).toEqual({ status: "failed", replyId: next.id, code: "provider_rejected" });
  });

  it("no outcome before the deadline: the Postgres wait's pending answer, with the row's id once there is a row", async () => {
    const relay = relayOf();
    const q = { orgId: org, taskId, requestId: randomUUID(), idempotencyKey: "never" };
    const started = Date.now();
    const none = await wait(q, 300);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(none).toEqual({
      status: "unknown",
      code: "outcome_pending",
      message: "no outcome within 300 ms; the reply may still be posted (a repeat with the same idempotency key returns it)",
      replyId: "",
    });
    expect(none).toEqual(await waitForReplyOutcome(store, db.pool, q, { deadlineMs: 300 }));

    const pending = await insertRow(db.pool, { org, taskId, state: "pending" });
    await relay.runOnce();
    const answer = await wait(pending.query, 100);
    expect(answer).toMatchObject({ status: "unknown", code: "outcome_pending", replyId: pending.id });
    expect(answer).toEqual(await waitForReplyOutcome(store, db.pool, pending.query, { deadlineMs: 100 }));
  });

  it("an abort rejects with Cancelled, as the Postgres wait does", async () => {
    const q = { orgId: org, taskId, requestId: randomUUID(), idempotencyKey: "k" };
    const cancelled = async (p: Promise<unknown>): Promise<SwitchyardError> => {
      const error = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SwitchyardError);
      return error as SwitchyardError;
    };
    const controller = new AbortController();
    const started = Date.now();
    const waiting = wait(q, 10_000, controller.signal);
    setTimeout(() => controller.abort(new Error("turn abandoned")), 50);
    const error = await cancelled(waiting);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(error.code).toBe(ErrorCode.Cancelled);
    expect((error.cause as Error).message).toBe("turn abandoned");
    const already = AbortSignal.abort();
    expect((await cancelled(wait(q, 10_000, already))).code).toBe(ErrorCode.Cancelled);
    expect((await cancelled(waitForReplyOutcome(store, db.pool, q, { deadlineMs: 10_000, signal: already }))).code).toBe(ErrorCode.Cancelled);
  });

  it("reads every changed row, page by page, and a later read's value is never overwritten by an earlier one", async () => {
    const rows = [];
    for (let i = 0; i < 5; i++) rows.push(await insertRow(db.pool, { org, taskId, state: "failed", code: `c${i}` }));
    expect(await relayOf({ pageSize: 2 }).runOnce()).toBe(10);
    for (const [i, row] of rows.entries()) expect(await wait(row.query, 100)).toEqual({ status: "failed", replyId: row.id, code: `c${i}` });

    // A value written from a read later than this relay's (another coordinator's) stands.
    const keys = replyOutcomeKeys(t.prefix, rows[0]!.query);
    const later = JSON.stringify({ order: Number.MAX_SAFE_INTEGER, replyId: rows[0]!.id, outcome: { status: "sent", replyId: rows[0]!.id } });
    await t.redis.set(keys.request, later);
    const fresh = relayOf({ pageSize: 2 });
    expect(await fresh.runOnce()).toBe(9);
    expect(await t.redis.get(keys.request)).toBe(later);
    // The relay remembers what it wrote: unchanged rows are not written again.
    expect(await fresh.runOnce()).toBe(0);
    expect(parsePublishedReply(await t.redis.get(keys.key))?.outcome).toEqual({ status: "failed", replyId: rows[0]!.id, code: "c0" });
    expect(await t.redis.pttl(keys.key)).toBeGreaterThan(23 * 60 * 60_000);
    expect(await t.redis.pttl(replyOutcomeKeys(t.prefix, rows[1]!.query).request)).toBeLessThanOrEqual(10 * 60_000);
  });
});
