/**
 * What a dial comes to when the provider or the network misbehaves. The rule under every case: a request that may
 * have been written is never sent again (`unknown`); only a connection that failed before the request, or a 429,
 * is dialed again.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { freePort } from "../support/ports.js";
import { startProviderStub, type ProviderStub } from "../support/provider-stubs.js";
import { GITHUB_ADDRESS, SLACK_ADDRESS, CAIRN_ADDRESS, insertConnection, insertReply, insertTask, loopbackSender, newTenant, readReply, runUntil } from "./sender-support.js";

describe("reply sender: outcomes", () => {
  let db: TestDatabase;
  const stubs: ProviderStub[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(stubs.map((s) => s.close()));
    await db.drop();
  });
  const github = async () => {
    const stub = await startProviderStub("github", { token: "ghp_outcomes" });
    stubs.push(stub);
    const org = await newTenant(db.pool);
    const connectionId = await insertConnection(db.pool, { org, kind: "github", accountKey: "github.com", apiBaseUrl: stub.apiBaseUrl, secret: "ghp_outcomes" });
    const taskId = await insertTask(db.pool, org, GITHUB_ADDRESS);
    const replyId = await insertReply(db.pool, { org, taskId, connectionId, text: "status update" });
    return { stub, org, connectionId, taskId, replyId };
  };

  it("429 with Retry-After: back to pending until the delay has passed, then sent", async () => {
    const { stub, replyId } = await github();
    stub.enqueue({ type: "rate_limit", retryAfter: "1" });
    const { sender, metrics } = loopbackSender(db.pool);

    await sender.runOnce();
    const waiting = await readReply(db.pool, replyId);
    expect(waiting).toMatchObject({ state: "pending", code: "provider_rate_limited", dial_attempts: 1 });
    expect(waiting.message).toContain("HTTP 429");
    expect(waiting.ms_until_next).toBeGreaterThan(700);
    expect(waiting.ms_until_next).toBeLessThanOrEqual(1_000);
    // Not due yet: a run now dials nothing.
    expect(await sender.runOnce()).toBe(0);
    expect(stub.requests).toHaveLength(1);

    const row = await runUntil(sender, db.pool, replyId, (r) => r.state !== "pending");
    expect(row).toMatchObject({ state: "sent", dial_attempts: 2, code: null, message: null, provider_id: stub.created[0]!.id });
    expect(stub.requests).toHaveLength(2);
    expect(stub.requests[1]!.at - stub.requests[0]!.at).toBeGreaterThanOrEqual(950);
    const dials = await metrics.registry.getSingleMetricAsString("switchyard_origin_reply_dials_total");
    expect(dials).toContain('{kind="github",outcome="retry"} 1');
    expect(dials).toContain('{kind="github",outcome="sent"} 1');
    await sender.close();
  });

  it("429 every time: failed provider_rate_limited after the configured dials; a huge Retry-After is capped", async () => {
    const { stub, replyId } = await github();
    stub.enqueue({ type: "rate_limit", retryAfter: "0" }, { type: "rate_limit", retryAfter: "0" }, { type: "rate_limit", retryAfter: "0" });
    const { sender } = loopbackSender(db.pool, { dialAttempts: 3 });
    const row = await runUntil(sender, db.pool, replyId, (r) => r.state !== "pending");
    expect(row).toMatchObject({ state: "failed", code: "provider_rate_limited", dial_attempts: 3 });
    expect(stub.requests).toHaveLength(3);

    const capped = await github();
    capped.stub.enqueue({ type: "rate_limit", retryAfter: "86400" });
    const { sender: cappedSender } = loopbackSender(db.pool, { maxRetryAfterMs: 3_000 });
    await cappedSender.runOnce();
    const waiting = await readReply(db.pool, capped.replyId);
    expect(waiting.state).toBe("pending");
    expect(waiting.ms_until_next).toBeGreaterThan(2_000);
    expect(waiting.ms_until_next).toBeLessThanOrEqual(3_000);
    await sender.close();
    await cappedSender.close();
  });

  it("GitHub's 403 rate limits (x-ratelimit-remaining: 0, or Retry-After) wait; a plain 403 is a rejection", async () => {
    const primary = await github();
    const resetAt = Math.floor(Date.now() / 1000) + 2;
    primary.stub.enqueue({ type: "status", status: 403, error: "API rate limit exceeded", headers: { "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(resetAt) } });
    const secondary = await github();
    secondary.stub.enqueue({ type: "status", status: 403, error: "You have exceeded a secondary rate limit", headers: { "retry-after": "3" } });
    const forbidden = await github();
    forbidden.stub.enqueue({ type: "status", status: 403, error: "Resource not accessible by integration" });
    const { sender } = loopbackSender(db.pool);

    await sender.runOnce();

    const a = await readReply(db.pool, primary.replyId);
    expect(a).toMatchObject({ state: "pending", code: "provider_rate_limited" });
    expect(a.ms_until_next).toBeGreaterThan(0);
    expect(a.ms_until_next).toBeLessThanOrEqual(2_100);
    const b = await readReply(db.pool, secondary.replyId);
    expect(b).toMatchObject({ state: "pending", code: "provider_rate_limited" });
    expect(b.ms_until_next).toBeGreaterThan(2_000);
    expect(await readReply(db.pool, forbidden.replyId)).toMatchObject({ state: "failed", code: "provider_rejected", message: "github answered HTTP 403: Resource not accessible by integration" });
    await sender.close();
  });

  it("Slack's ok:false ratelimited is a 429 in words: dialed again, then sent", async () => {
    const slack = await startProviderStub("slack", { token: "xoxb-rl" });
    stubs.push(slack);
    const org = await newTenant(db.pool);
    const connectionId = await insertConnection(db.pool, { org, kind: "slack", accountKey: "T0STUB", apiBaseUrl: slack.apiBaseUrl, secret: "xoxb-rl" });
    const replyId = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, SLACK_ADDRESS), connectionId, text: "hi" });
    slack.enqueue({ type: "slack_error", error: "ratelimited" });
    const { sender } = loopbackSender(db.pool);
    await sender.runOnce();
    expect(await readReply(db.pool, replyId)).toMatchObject({ state: "pending", code: "provider_rate_limited" });
    const row = await runUntil(sender, db.pool, replyId, (r) => r.state !== "pending");
    expect(row).toMatchObject({ state: "sent", dial_attempts: 2 });
    await sender.close();
  });

  it("connection refused: dialed again with backoff, then failed connect_failed; nothing ever reached anyone", async () => {
    const org = await newTenant(db.pool);
    const port = await freePort();
    const connectionId = await insertConnection(db.pool, { org, kind: "github", accountKey: "github.com", apiBaseUrl: `http://127.0.0.1:${port}`, secret: "ghp_refused" });
    const replyId = await insertReply(db.pool, { org, taskId: await insertTask(db.pool, org, GITHUB_ADDRESS), connectionId, text: "hello" });
    const { sender } = loopbackSender(db.pool, { dialAttempts: 3, retryBaseMs: 100 });

    await sender.runOnce();
    const first = await readReply(db.pool, replyId);
    expect(first).toMatchObject({ state: "pending", code: "connect_failed", dial_attempts: 1 });
    expect(first.ms_until_next).toBeGreaterThan(0);
    expect(first.message).toMatch(/ECONNREFUSED/);

    const row = await runUntil(sender, db.pool, replyId, (r) => r.state !== "pending");
    expect(row).toMatchObject({ state: "failed", code: "connect_failed", dial_attempts: 3 });
    expect(row.message).toMatch(/after 3 dials/);
    await sender.close();
  });

  it("a timeout after the request was sent is unknown, and the provider saw exactly one request", async () => {
    const { stub, replyId } = await github();
    stub.enqueue({ type: "hang" });
    const { sender } = loopbackSender(db.pool, { timeoutMs: 500 });

    await sender.runOnce();
    const row = await readReply(db.pool, replyId);
    expect(row).toMatchObject({ state: "unknown", code: "timeout" });
    expect(row.finished_at).not.toBeNull();
    // Whatever runs next, the reply is never sent again.
    await sender.runOnce();
    await sender.sweep();
    await sender.runOnce();
    expect(stub.requests).toHaveLength(1);
    expect((await readReply(db.pool, replyId)).state).toBe("unknown");
    await sender.close();
  });

  it("a reset mid-response and a 5xx are unknown, never dialed again; a 4xx is failed", async () => {
    const reset = await github();
    reset.stub.enqueue({ type: "close" });
    const fiveHundred = await github();
    fiveHundred.stub.enqueue({ type: "status", status: 502, error: "Server Error" });
    const notFound = await github();
    notFound.stub.enqueue({ type: "status", status: 404, error: "Not Found" });
    const { sender } = loopbackSender(db.pool);

    await sender.runOnce();
    await sender.runOnce();

    expect(await readReply(db.pool, reset.replyId)).toMatchObject({ state: "unknown", code: "connection_lost" });
    expect(await readReply(db.pool, fiveHundred.replyId)).toMatchObject({ state: "unknown", code: "provider_error", message: "github answered HTTP 502: Server Error" });
    expect(await readReply(db.pool, notFound.replyId)).toMatchObject({ state: "failed", code: "provider_rejected", message: "github answered HTTP 404: Not Found" });
    for (const s of [reset, fiveHundred, notFound]) expect(s.stub.requests).toHaveLength(1);
    await sender.close();
  });

  it("a crash mid-dial (row left dialing, its lease expired) becomes unknown interrupted and is never dialed", async () => {
    const { stub, org, connectionId, taskId } = await github();
    await db.pool.query("UPDATE origin_replies SET state = 'sent', provider_id = '1' WHERE task_id = $1", [taskId]);
    const crashed = await insertReply(db.pool, { org, taskId, connectionId, text: "mid-dial", state: "dialing", claimedUntilSql: "now() - interval '1 second'" });
    const held = await insertReply(db.pool, { org, taskId, connectionId, text: "still held", state: "dialing", claimedUntilSql: "now() + interval '1 minute'" });
    const { sender } = loopbackSender(db.pool);

    await sender.job.run(Date.now());

    expect(await readReply(db.pool, crashed)).toMatchObject({ state: "unknown", code: "interrupted" });
    // A live lease is left alone: its sender is still dialing.
    expect((await readReply(db.pool, held)).state).toBe("dialing");
    expect(stub.requests).toHaveLength(0);
    await sender.close();
  });

  it("a sender whose dial outlives its lease: the sweep marks it unknown and the late answer does not overwrite it", async () => {
    const { stub, replyId } = await github();
    stub.enqueue({ type: "hang" });
    const slow = loopbackSender(db.pool, { timeoutMs: 1_500, leaseMs: 200 });
    const other = loopbackSender(db.pool);
    const dialing = slow.sender.runOnce();
    await new Promise((r) => setTimeout(r, 500));
    expect(await other.sender.sweep()).toBe(1);
    await dialing;
    expect(await readReply(db.pool, replyId)).toMatchObject({ state: "unknown", code: "interrupted" });
    expect(stub.requests).toHaveLength(1);
    await slow.sender.close();
    await other.sender.close();
  });

  it("text over the provider's limit is failed text_too_long without a dial", async () => {
    const cairn = await startProviderStub("cairn", { token: "cairn-long" });
    stubs.push(cairn);
    const org = await newTenant(db.pool);
    const connectionId = await insertConnection(db.pool, { org, kind: "cairn", accountKey: "https://cairn.example", apiBaseUrl: cairn.apiBaseUrl, secret: "cairn-long" });
    const taskId = await insertTask(db.pool, org, CAIRN_ADDRESS);
    const tooLong = await insertReply(db.pool, { org, taskId, connectionId, text: "x".repeat(16_385) });
    const fits = await insertReply(db.pool, { org, taskId, connectionId, text: "x".repeat(16_384) });
    const { sender } = loopbackSender(db.pool);
    await sender.runOnce();
    expect(await readReply(db.pool, tooLong)).toMatchObject({ state: "failed", code: "text_too_long" });
    expect((await readReply(db.pool, fits)).state).toBe("sent");
    expect(cairn.requests).toHaveLength(1);
    await sender.close();
  });

  it("kick() wakes a sender that runs its job, at once", async () => {
    const { stub, replyId, org, connectionId, taskId } = await github();
    const { sender } = loopbackSender(db.pool);
    await sender.runOnce();
    expect((await readReply(db.pool, replyId)).state).toBe("sent");
    const next = await insertReply(db.pool, { org, taskId, connectionId, text: "second" });
    sender.kick();
    const row = await waitForState(next, "sent");
    expect(row.provider_id).toBe(stub.created[1]!.id);
    await sender.close();
  });

  async function waitForState(id: string, state: string) {
    for (let i = 0; i < 100; i++) {
      const row = await readReply(db.pool, id);
      if (row.state === state) return row;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`reply ${id} never became ${state}`);
  }
});
