/**
 * How the sender settles rows beyond a single dial's answer: a 429 holds the whole connection, a failure before the
 * request was written is retried (never `unknown`), a row pending too long is expired rather than posted late, and
 * every settled row is counted in switchyard_origin_replies_total.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pool } from "../../src/store/db.js";
import { createSecretCipher } from "../../src/vault/secret-cipher.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { startProviderStub, type ProviderStub } from "../support/provider-stubs.js";
import { GITHUB_ADDRESS, insertConnection, insertReply, insertTask, loopbackSender, newTenant, readReply, runUntil } from "./sender-support.js";

describe("reply sender: settling", () => {
  let db: TestDatabase;
  const stubs: ProviderStub[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(stubs.map((s) => s.close()));
    await db.drop();
  });
  const github = async (token = "ghp_settling") => {
    const stub = await startProviderStub("github", { token });
    stubs.push(stub);
    const org = await newTenant(db.pool);
    const connectionId = await insertConnection(db.pool, { org, kind: "github", accountKey: "github.com", apiBaseUrl: stub.apiBaseUrl, secret: token });
    const taskId = await insertTask(db.pool, org, GITHUB_ADDRESS);
    return { stub, org, connectionId, taskId };
  };

  it("a 429 holds the whole connection: its other rows wait for Retry-After without a dial, then all are sent", async () => {
    const { stub, org, connectionId, taskId } = await github();
    const ids = [];
    for (const text of ["one", "two", "three"]) ids.push(await insertReply(db.pool, { org, taskId, connectionId, text }));
    stub.enqueue({ type: "rate_limit", retryAfter: "1" });
    const { sender } = loopbackSender(db.pool);

    await sender.runOnce();
    expect(stub.requests).toHaveLength(1);
    const { rows } = await db.pool.query<{ ms: number }>(
      "SELECT (EXTRACT(EPOCH FROM (rate_limited_until - now())) * 1000)::float8 AS ms FROM connections WHERE id = $1",
      [connectionId],
    );
    expect(rows[0]!.ms).toBeGreaterThan(700);
    expect(rows[0]!.ms).toBeLessThanOrEqual(1_000);
    // The rows not dialed are untouched: still pending, no attempt used.
    const states = await Promise.all(ids.map((id) => readReply(db.pool, id)));
    expect(states.filter((r) => r.state === "pending" && r.dial_attempts === 0)).toHaveLength(2);
    expect(await sender.runOnce()).toBe(0);

    for (const id of ids) await runUntil(sender, db.pool, id, (r) => r.state !== "pending");
    const settled = await Promise.all(ids.map((id) => readReply(db.pool, id)));
    expect(settled.map((r) => r.state)).toEqual(["sent", "sent", "sent"]);
    expect(settled.map((r) => r.dial_attempts).sort()).toEqual([1, 1, 2]);
    expect(stub.requests).toHaveLength(4);
    const limited = stub.requests[0]!.at;
    for (const request of stub.requests.slice(1)) expect(request.at - limited).toBeGreaterThanOrEqual(950);
    await sender.close();
  });

  it("a secret that cannot be opened is retried as an attempt, then failed connection_unusable; never unknown, never dialed", async () => {
    const { stub, org, connectionId: id, taskId } = await github();
    // Sealed under a key the sender's ring does not hold (e.g. the ring lost the key it was sealed with).
    const other = createSecretCipher([{ id: "other", key: randomBytes(32) }])!;
    await db.pool.query("UPDATE connections SET secret_ciphertext = $2 WHERE id = $1", [id, other.seal("ghp_settling", `connection:${id}`)]);
    const replyId = await insertReply(db.pool, { org, taskId, connectionId: id, text: "sealed elsewhere" });
    const { sender, metrics } = loopbackSender(db.pool, { dialAttempts: 2, retryBaseMs: 100 });

    await sender.runOnce();
    const first = await readReply(db.pool, replyId);
    expect(first).toMatchObject({ state: "pending", code: "connection_unusable", dial_attempts: 1 });
    expect(first.ms_until_next).toBeGreaterThan(0);
    const row = await runUntil(sender, db.pool, replyId, (r) => r.state !== "pending");
    expect(row).toMatchObject({ state: "failed", code: "connection_unusable", dial_attempts: 2 });
    expect(row.message).toMatch(/after 2 dials/);
    expect(stub.requests).toHaveLength(0);
    expect(await metrics.registry.getSingleMetricAsString("switchyard_origin_replies_total")).toContain('{status="failed",code="connection_unusable"} 1');
    await sender.close();
  });

  it("a database failure while preparing the dial puts the row back to pending, not unknown", async () => {
    const { stub, org, connectionId, taskId } = await github();
    const replyId = await insertReply(db.pool, { org, taskId, connectionId, text: "blip" });
    let failures = 1;
    const flaky = {
      query: (sql: string, params?: unknown[]) => {
        // The connection read (the first query naming a connection by tenant and id).
        if (failures > 0 && sql.includes("FROM connections WHERE org_id = $1 AND id = $2")) {
          failures--;
          return Promise.reject(new Error("Connection terminated unexpectedly"));
        }
        return db.pool.query(sql, params);
      },
    } as unknown as Pool;
    const { sender } = loopbackSender(flaky);

    await sender.runOnce();
    expect(await readReply(db.pool, replyId)).toMatchObject({ state: "pending", code: "sender_error", dial_attempts: 1 });
    expect(stub.requests).toHaveLength(0);
    const row = await runUntil(sender, db.pool, replyId, (r) => r.state !== "pending");
    expect(row).toMatchObject({ state: "sent", dial_attempts: 2 });
    await sender.close();
  });

  it("a row pending for longer than maxPendingMs is failed expired by the sweep and never dialed; a recently approved one is dialed", async () => {
    const { stub, org, connectionId, taskId } = await github();
    const stale = await insertReply(db.pool, { org, taskId, connectionId, text: "hours late" });
    await db.pool.query("UPDATE origin_replies SET created_at = now() - interval '2 hours', updated_at = now() - interval '2 hours' WHERE id = $1", [stale]);
    const { sender, metrics } = loopbackSender(db.pool);

    // A kicked run (no sweep first) does not dial it either.
    expect(await sender.runOnce()).toBe(0);
    expect(await sender.sweep()).toBe(1);
    const row = await readReply(db.pool, stale);
    expect(row).toMatchObject({ state: "failed", code: "expired", next_attempt_at: null });
    expect(row.finished_at).not.toBeNull();
    expect(stub.requests).toHaveLength(0);
    expect(await metrics.registry.getSingleMetricAsString("switchyard_origin_replies_total")).toContain('{status="failed",code="expired"} 1');

    // Created long ago but approved (made pending) just now: it has not waited, and is sent.
    const approved = await insertReply(db.pool, { org, taskId, connectionId, text: "approved late" });
    await db.pool.query("UPDATE origin_replies SET created_at = now() - interval '2 hours' WHERE id = $1", [approved]);
    await sender.job.run(Date.now());
    expect((await readReply(db.pool, approved)).state).toBe("sent");

    // The limit is an option.
    const young = await insertReply(db.pool, { org, taskId, connectionId, text: "a minute old" });
    await db.pool.query("UPDATE origin_replies SET updated_at = now() - interval '1 minute' WHERE id = $1", [young]);
    const { sender: strict } = loopbackSender(db.pool, { maxPendingMs: 30_000 });
    await strict.job.run(Date.now());
    expect(await readReply(db.pool, young)).toMatchObject({ state: "failed", code: "expired" });
    expect(stub.requests).toHaveLength(1);
    await sender.close();
    await strict.close();
  });

  it("counts every settled row in switchyard_origin_replies_total by status and code", async () => {
    const sent = await github();
    const sentId = await insertReply(db.pool, { org: sent.org, taskId: sent.taskId, connectionId: sent.connectionId, text: "ok" });
    const rejected = await github();
    rejected.stub.enqueue({ type: "status", status: 404, error: "Not Found" });
    await insertReply(db.pool, { org: rejected.org, taskId: rejected.taskId, connectionId: rejected.connectionId, text: "404" });
    const broken = await github();
    broken.stub.enqueue({ type: "status", status: 502, error: "Server Error" });
    await insertReply(db.pool, { org: broken.org, taskId: broken.taskId, connectionId: broken.connectionId, text: "502" });
    const limited = await github();
    limited.stub.enqueue({ type: "rate_limit", retryAfter: "30" });
    await insertReply(db.pool, { org: limited.org, taskId: limited.taskId, connectionId: limited.connectionId, text: "429" });
    const crashed = await github();
    await insertReply(db.pool, { org: crashed.org, taskId: crashed.taskId, connectionId: crashed.connectionId, text: "mid-dial", state: "dialing", claimedUntilSql: "now() - interval '1 second'" });
    const { sender, metrics } = loopbackSender(db.pool);

    await sender.job.run(Date.now());

    expect((await readReply(db.pool, sentId)).state).toBe("sent");
    const counted = await metrics.registry.getSingleMetricAsString("switchyard_origin_replies_total");
    expect(counted).toContain('{status="sent",code=""} 1');
    expect(counted).toContain('{status="failed",code="provider_rejected"} 1');
    expect(counted).toContain('{status="unknown",code="provider_error"} 1');
    expect(counted).toContain('{status="unknown",code="interrupted"} 1');
    // A row put back to pending has not settled.
    expect(counted).not.toContain("provider_rate_limited");
    await sender.close();
  });
});
