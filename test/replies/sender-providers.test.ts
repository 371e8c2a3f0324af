/**
 * Each adapter posts the provider's real request (method, path, auth header, body) to the connection's API base URL
 * with the connection's token, and the reply row records `sent` with the provider's id and permalink.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isSelfReply } from "../../src/ingest/echo.js";
import { createPostgresEchoStore } from "../../src/store/ingest/postgres-echo-store.js";
import { readReplyOutcome } from "../../src/replies/reply-outcome.js";
import { createPostgresReplyStore } from "../../src/store/replies/postgres-reply-store.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { startProviderStub, type ProviderStub } from "../support/provider-stubs.js";
import {
  CAIRN_ADDRESS,
  GITEA_ADDRESS,
  GITHUB_ADDRESS,
  SLACK_ADDRESS,
  insertConnection,
  insertReply,
  insertTask,
  loopbackSender,
  readReply,
  newTenant,
} from "./sender-support.js";

describe("reply sender: provider adapters", () => {
  let db: TestDatabase;
  const stubs: ProviderStub[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(stubs.map((s) => s.close()));
    await db.drop();
  });
  const stub = async (...args: Parameters<typeof startProviderStub>) => {
    const s = await startProviderStub(...args);
    stubs.push(s);
    return s;
  };

  it("GitHub: POST /repos/{owner}/{repo}/issues/{n}/comments with `token`, records the comment id and html_url", async () => {
    const ORG = await newTenant(db.pool);
    const github = await stub("github", { token: "ghp_githubtoken111" });
    const connectionId = await insertConnection(db.pool, { org: ORG, kind: "github", accountKey: "github.com", apiBaseUrl: github.apiBaseUrl, secret: "ghp_githubtoken111" });
    const taskId = await insertTask(db.pool, ORG, GITHUB_ADDRESS);
    const replyId = await insertReply(db.pool, { org: ORG, taskId, connectionId, text: "Fixed in #43." });
    const { sender, metrics } = loopbackSender(db.pool);

    expect(await sender.runOnce()).toBe(1);

    expect(github.requests).toHaveLength(1);
    const [req] = github.requests;
    expect(req!.method).toBe("POST");
    expect(req!.path).toBe("/repos/acme/widgets/issues/42/comments");
    expect(req!.headers.authorization).toBe("token ghp_githubtoken111");
    expect(JSON.parse(req!.body)).toEqual({ body: "Fixed in #43." });
    const row = await readReply(db.pool, replyId);
    expect(row).toMatchObject({ state: "sent", code: null, provider_id: github.created[0]!.id, permalink: github.created[0]!.permalink, dial_attempts: 1 });
    expect(row.permalink).toMatch(/\/acme\/widgets\/issues\/42#issuecomment-\d+$/);
    expect(row.finished_at).not.toBeNull();
    const dials = await metrics.registry.getSingleMetricAsString("switchyard_origin_reply_dials_total");
    expect(dials).toContain('switchyard_origin_reply_dials_total{kind="github",outcome="sent"} 1');
    await sender.close();
  });

  it("Gitea: POST {api}/repos/{owner}/{repo}/issues/{index}/comments with `token`, the api base path kept", async () => {
    const ORG = await newTenant(db.pool);
    const gitea = await stub("gitea", { token: "gitea-token-222" });
    const connectionId = await insertConnection(db.pool, { org: ORG, kind: "gitea", accountKey: "gitea.example", apiBaseUrl: gitea.apiBaseUrl, secret: "gitea-token-222" });
    const taskId = await insertTask(db.pool, ORG, GITEA_ADDRESS);
    const replyId = await insertReply(db.pool, { org: ORG, taskId, connectionId, text: "Looks good to me." });
    const { sender } = loopbackSender(db.pool);

    await sender.runOnce();

    expect(gitea.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /api/v1/repos/acme/gadgets/issues/7/comments"]);
    expect(gitea.requests[0]!.headers.authorization).toBe("token gitea-token-222");
    expect(JSON.parse(gitea.requests[0]!.body)).toEqual({ body: "Looks good to me." });
    expect(await readReply(db.pool, replyId)).toMatchObject({ state: "sent", provider_id: gitea.created[0]!.id, permalink: gitea.created[0]!.permalink });
    await sender.close();
  });

  it("Slack: chat.postMessage in the thread with Bearer, ts as id, the permalink, and learns bot_id/app_id", async () => {
    const ORG = await newTenant(db.pool);
    const slack = await stub("slack", { token: "xoxb-slack-333", botId: "B07BOT", appId: "A07APP" });
    const connectionId = await insertConnection(db.pool, { org: ORG, kind: "slack", accountKey: "T0STUB", apiBaseUrl: slack.apiBaseUrl, secret: "xoxb-slack-333" });
    const taskId = await insertTask(db.pool, ORG, SLACK_ADDRESS);
    const replyId = await insertReply(db.pool, { org: ORG, taskId, connectionId, text: "Done: deployed to staging." });
    const { sender } = loopbackSender(db.pool);

    await sender.runOnce();

    const post = slack.requests.find((r) => r.method === "POST");
    expect(post?.path).toBe("/api/chat.postMessage");
    expect(post?.headers.authorization).toBe("Bearer xoxb-slack-333");
    expect(post?.headers["content-type"]).toMatch(/^application\/json/);
    expect(JSON.parse(post!.body)).toEqual({ channel: "C0123ABC", thread_ts: "1700000000.000100", text: "Done: deployed to staging." });
    const permalinkCall = slack.requests.find((r) => r.method === "GET");
    expect(permalinkCall?.path).toBe(`/api/chat.getPermalink?channel=C0123ABC&message_ts=${slack.created[0]!.id}`);
    expect(permalinkCall?.headers.authorization).toBe("Bearer xoxb-slack-333");
    const row = await readReply(db.pool, replyId);
    expect(row).toMatchObject({ state: "sent", provider_id: slack.created[0]!.id, permalink: slack.created[0]!.permalink });
    expect(row.provider_id).toMatch(/^\d+\.\d+$/);
    const { rows } = await db.pool.query("SELECT bot_id, app_id FROM connections WHERE id = $1", [connectionId]);
    expect(rows[0]).toEqual({ bot_id: "B07BOT", app_id: "A07APP" });
    await sender.close();
  });

  it("Slack: the post is recorded sent (ts, bot id) before the permalink lookup; a waiting caller still gets the permalink", async () => {
    const ORG = await newTenant(db.pool);
    let replyId = "";
    const seen: Array<{ echoByTs: boolean; echoByBot: boolean; outcome: unknown }> = [];
    const slack = await stub("slack", {
      token: "xoxb-slack-555",
      botId: "B09BOT",
      // While chat.getPermalink is in flight: the echo of the post must already be recognised.
      beforeAnswer: async (request) => {
        if (request.method !== "GET") return;
        const ts = slack.created[0]!.id;
        seen.push({
          echoByTs: await isSelfReply(db.pool, ORG, { account: { kind: "slack", accountKey: "T0STUB" }, providerIds: [ts] }, createPostgresEchoStore()),
          echoByBot: await isSelfReply(db.pool, ORG, { providerIds: [], slackBotId: "B09BOT" }, createPostgresEchoStore()),
          outcome: await readReplyOutcome(createPostgresReplyStore(), db.pool, { orgId: ORG, taskId, requestId: `req-${replyId}`, idempotencyKey: `key-${replyId}` }),
        });
      },
    });
    const connectionId = await insertConnection(db.pool, { org: ORG, kind: "slack", accountKey: "T0STUB", apiBaseUrl: slack.apiBaseUrl, secret: "xoxb-slack-555" });
    const taskId = await insertTask(db.pool, ORG, SLACK_ADDRESS);
    replyId = await insertReply(db.pool, { org: ORG, taskId, connectionId, text: "echo me" });
    const { sender } = loopbackSender(db.pool);

    await sender.runOnce();

    // Recorded before the lookup; the caller's outcome waits for the permalink (not final yet).
    expect(seen).toEqual([{ echoByTs: true, echoByBot: true, outcome: undefined }]);
    expect(await readReplyOutcome(createPostgresReplyStore(), db.pool, { orgId: ORG, taskId, requestId: `req-${replyId}`, idempotencyKey: `key-${replyId}` })).toEqual({
      status: "sent",
      replyId,
      permalink: slack.created[0]!.permalink,
    });
    const { rows } = await db.pool.query("SELECT claimed_until FROM origin_replies WHERE id = $1", [replyId]);
    expect(rows[0]).toEqual({ claimed_until: null });
    await sender.close();
  });

  it("Slack: ok:false is failed with Slack's error; a failing getPermalink leaves the post sent", async () => {
    const ORG = await newTenant(db.pool);
    const slack = await stub("slack", { token: "xoxb-slack-444" });
    const connectionId = await insertConnection(db.pool, { org: ORG, kind: "slack", accountKey: "T0STUB", apiBaseUrl: slack.apiBaseUrl, secret: "xoxb-slack-444" });
    const taskId = await insertTask(db.pool, ORG, SLACK_ADDRESS);
    slack.enqueue({ type: "slack_error", error: "not_in_channel" });
    const rejected = await insertReply(db.pool, { org: ORG, taskId, connectionId, text: "one" });
    const { sender } = loopbackSender(db.pool);
    await sender.runOnce();
    expect(await readReply(db.pool, rejected)).toMatchObject({ state: "failed", code: "provider_rejected", message: "slack answered ok:false: not_in_channel" });

    // chat.getPermalink failing: the message was posted, so the reply is sent, without a permalink.
    const noPermalink = await stub("slack", { token: "xoxb-slack-444", permalinkError: "internal_error" });
    await db.pool.query("UPDATE connections SET api_base_url = $2 WHERE id = $1", [connectionId, noPermalink.apiBaseUrl]);
    const sentId = await insertReply(db.pool, { org: ORG, taskId, connectionId, text: "two" });
    await sender.runOnce();
    expect(noPermalink.requests.map((r) => r.method)).toEqual(["POST", "GET"]);
    expect(await readReply(db.pool, sentId)).toMatchObject({ state: "sent", provider_id: noPermalink.created[0]!.id, permalink: null });
    await sender.close();
  });

  it("Cairn: POST /v1/artifacts/{id}/comments with Bearer and { body }, records id and url", async () => {
    const ORG = await newTenant(db.pool);
    const cairn = await stub("cairn", { token: "cairn-token-555" });
    const connectionId = await insertConnection(db.pool, { org: ORG, kind: "cairn", accountKey: "https://cairn.example", apiBaseUrl: cairn.apiBaseUrl, secret: "cairn-token-555" });
    const taskId = await insertTask(db.pool, ORG, CAIRN_ADDRESS);
    const replyId = await insertReply(db.pool, { org: ORG, taskId, connectionId, text: "Summary attached." });
    const { sender } = loopbackSender(db.pool);

    await sender.runOnce();

    expect(cairn.requests.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/artifacts/art_9xK2/comments"]);
    expect(cairn.requests[0]!.headers.authorization).toBe("Bearer cairn-token-555");
    expect(JSON.parse(cairn.requests[0]!.body)).toEqual({ body: "Summary attached." });
    const row = await readReply(db.pool, replyId);
    expect(row).toMatchObject({ state: "sent", provider_id: cairn.created[0]!.id, permalink: cairn.created[0]!.permalink });
    expect(row.provider_id).toMatch(/^cmt_\d+$/);
    await sender.close();
  });

  it("a wrong token is a 401: failed provider_rejected with the provider's words, never the token", async () => {
    const ORG = await newTenant(db.pool);
    const github = await stub("github", { token: "ghp_the_right_one" });
    const connectionId = await insertConnection(db.pool, { org: ORG, kind: "github", accountKey: "github.com", apiBaseUrl: github.apiBaseUrl, secret: "ghp_the_wrong_one" });
    const taskId = await insertTask(db.pool, ORG, GITHUB_ADDRESS);
    const replyId = await insertReply(db.pool, { org: ORG, taskId, connectionId, text: "hello" });
    const { sender, log } = loopbackSender(db.pool);

    await sender.runOnce();
    await sender.runOnce();

    expect(github.requests).toHaveLength(1);
    const row = await readReply(db.pool, replyId);
    expect(row).toMatchObject({ state: "failed", code: "provider_rejected", message: "github answered HTTP 401: Bad credentials" });
    expect(log.lines.join("")).not.toContain("ghp_the_wrong_one");
    await sender.close();
  });
});
