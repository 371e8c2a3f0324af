/**
 * Verified ingest end to end through the gateway: each source's signature, idempotent redelivery, the reply
 * address on the task row (and none for generic), 401/404/413 with nothing stored, Slack's legacy token kept from
 * the task input. Echo suppression: echo.test.ts; replayed bodies: body-replay.test.ts.
 */
import { createRequire } from "node:module";
import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestSource } from "../../src/gen/switchyard/api/v1/ingest_pb.js";
import { cairnHeaders, createIngestBed, giteaHeaders, githubHeaders, slackHeaders, type IngestBed } from "./support.js";

const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as Array<{ name: string; examples: any[] }>;
const issueComment = examples.find((e) => e.name === "issue_comment")!.examples[0];
const ping = examples.find((e) => e.name === "ping")!.examples[0];
/** GitHub and Gitea bodies are their own identity (body-replay.test.ts): each test posts a comment of its own. */
let nextCommentId = 7_000_000;
const freshComment = () => ({ ...issueComment, comment: { ...issueComment.comment, id: nextCommentId++ } });

describe("POST /api/v1/ingest/{id}", () => {
  let bed: IngestBed;
  const eps: Record<string, { id: string; secret: string }> = {};
  const stored = () => bed.count("SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM ingest_deliveries) AS n");
  const replyToOf = async (taskId: string) => (await bed.rt.pool.query("SELECT reply_to, input FROM tasks WHERE id = $1", [taskId])).rows[0];

  beforeAll(async () => {
    bed = await createIngestBed({ maxBodyBytes: 64 * 1024 });
    for (const [name, source] of [
      ["github", IngestSource.GITHUB],
      ["gitea", IngestSource.GITEA],
      ["slack", IngestSource.SLACK],
      ["cairn", IngestSource.CAIRN],
      ["generic", IngestSource.GENERIC],
    ] as const) {
      const created = await bed.ingest.create({ source, workflow: "triage" });
      eps[name] = { id: created.endpoint!.id, secret: created.secret };
    }
  });
  afterAll(async () => {
    await bed?.cleanup();
  });

  it("GitHub issue_comment: 202, one task of the workflow with a forge_comment address and the delivery recorded", async () => {
    const comment = freshComment();
    const body = JSON.stringify(comment);
    const bodySha256 = createHash("sha256").update(body).digest("hex");
    const delivery = randomUUID();
    const res = await bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "issue_comment", delivery));
    expect(res.status).toBe(202);
    const row = await replyToOf(res.body.taskId);
    expect(row.reply_to).toEqual({ kind: "forge_comment", forge: "github", host: "github.com", repository: "Codertocat/Hello-World", number: 1 });
    expect(row.input).toEqual({ source: "github", event: "issue_comment", delivery, body: comment });
    const deliveryRow = (await bed.rt.pool.query("SELECT * FROM ingest_deliveries WHERE delivery_id = $1", [delivery])).rows[0];
    expect(deliveryRow).toMatchObject({ endpoint_id: eps.github!.id, org_id: "acme", event: "issue_comment", cause: "task_started", task_id: res.body.taskId, body_sha256: bodySha256 });

    // A redelivery (same X-GitHub-Delivery) answers the same task and starts nothing.
    const again = await bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "issue_comment", delivery));
    expect(again).toEqual({ status: 200, body: { taskId: res.body.taskId, duplicate: true } });
    expect(await bed.count("SELECT count(*) AS n FROM tasks WHERE idempotency_key = $1", [`ingest:${eps.github!.id}:body:${bodySha256}`])).toBe(1);
    expect(await bed.count("SELECT count(*) AS n FROM ingest_deliveries WHERE delivery_id = $1", [delivery])).toBe(1);
  });

  it("concurrent redeliveries start one task", async () => {
    const body = JSON.stringify(freshComment());
    const delivery = randomUUID();
    const headers = await githubHeaders(eps.github!.secret, body, "issue_comment", delivery);
    const answers = await Promise.all(Array.from({ length: 8 }, () => bed.post(eps.github!.id, body, headers)));
    expect(new Set(answers.map((a) => a.body.taskId)).size).toBe(1);
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    expect(await bed.count("SELECT count(*) AS n FROM tasks WHERE idempotency_key = $1", [`ingest:${eps.github!.id}:body:${createHash("sha256").update(body).digest("hex")}`])).toBe(1);
  });

  it("a bad signature is 401, stores nothing and is counted", async () => {
    const body = JSON.stringify(issueComment);
    const before = await stored();
    const forged = await bed.post(eps.github!.id, body, await githubHeaders("not-the-secret", body, "issue_comment", randomUUID()));
    expect(forged.status).toBe(401);
    const tampered = await bed.post(eps.github!.id, body.replace("Codertocat", "Attacker"), await githubHeaders(eps.github!.secret, body, "issue_comment", randomUUID()));
    expect(tampered.status).toBe(401);
    const unsigned = await bed.post(eps.github!.id, body, { "x-github-event": "issue_comment", "x-github-delivery": randomUUID() });
    expect(unsigned.status).toBe(401);
    const gitea = await bed.post(eps.gitea!.id, body, giteaHeaders("wrong", body, "issue_comment", randomUUID()));
    expect(gitea.status).toBe(401);
    const slackBody = JSON.stringify({ type: "event_callback", team_id: "T1", event_id: "Ev9", event: { type: "message", channel: "C1", ts: "1.1" } });
    expect((await bed.post(eps.slack!.id, slackBody, slackHeaders("wrong", slackBody))).status).toBe(401);
    const cairnBody = JSON.stringify({ type: "artifact.created", instance: "https://cairn.example", data: { artifact: { id: "a1" } } });
    expect((await bed.post(eps.cairn!.id, cairnBody, cairnHeaders(`whsec_${Buffer.alloc(32, 1).toString("base64")}`, cairnBody, "msg_x"))).status).toBe(401);
    expect(await stored()).toBe(before);
    const metrics = await bed.rt.metrics.registry.metrics();
    expect(metrics).toMatch(/switchyard_ingest_deliveries_total\{source="github",outcome="rejected_signature"\} 3/);
    expect(metrics).toMatch(/switchyard_ingest_deliveries_total\{source="cairn",outcome="rejected_signature"\} 1/);
  });

  it("GitHub ping is recorded as ignored and starts no task", async () => {
    const body = JSON.stringify(ping);
    const tasks = await bed.count("SELECT count(*) AS n FROM tasks");
    const res = await bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "ping", "ping-1"));
    expect(res).toEqual({ status: 200, body: { cause: "ignored" } });
    expect(await bed.count("SELECT count(*) AS n FROM tasks")).toBe(tasks);
    expect(await bed.count("SELECT count(*) AS n FROM ingest_deliveries WHERE delivery_id = 'ping-1' AND cause = 'ignored'")).toBe(1);
  });

  it("Gitea pull_request: a forge_comment on the Gitea host", async () => {
    const body = JSON.stringify({ action: "opened", number: 4, pull_request: { number: 4 }, repository: { full_name: "team/app", html_url: "https://git.example.org/team/app" } });
    const res = await bed.post(eps.gitea!.id, body, giteaHeaders(eps.gitea!.secret, body, "pull_request", randomUUID()));
    expect(res.status).toBe(202);
    expect((await replyToOf(res.body.taskId)).reply_to).toEqual({ kind: "forge_comment", forge: "gitea", host: "git.example.org", repository: "team/app", number: 4 });
  });

  it("Slack: url_verification answered after verification; a stale timestamp is 401; an event_callback gets a slack_thread", async () => {
    const challenge = JSON.stringify({ type: "url_verification", token: "legacy", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
    const ok = await bed.post(eps.slack!.id, challenge, slackHeaders(eps.slack!.secret, challenge));
    expect(ok).toEqual({ status: 200, body: { challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" } });
    expect((await bed.post(eps.slack!.id, challenge, slackHeaders("wrong", challenge))).status).toBe(401);

    const body = JSON.stringify({
      token: "legacy",
      team_id: "T0ACME",
      api_app_id: "A0OTHER",
      type: "event_callback",
      event_id: "Ev0001",
      event_time: 1700000000,
      event: { type: "app_mention", user: "U1", text: "<@U0BOT> triage this", ts: "1700000000.000200", thread_ts: "1700000000.000100", channel: "C0ENG", event_ts: "1700000000.000200" },
    });
    const before = await stored();
    const stale = await bed.post(eps.slack!.id, body, slackHeaders(eps.slack!.secret, body, Math.floor(Date.now() / 1000) - 6 * 60));
    expect(stale.status).toBe(401);
    expect(stale.body.error).toMatch(/5 minutes/);
    expect(await stored()).toBe(before);
    expect(await bed.rt.metrics.registry.metrics()).toMatch(/switchyard_ingest_deliveries_total\{source="slack",outcome="rejected_stale"\} 1/);

    const res = await bed.post(eps.slack!.id, body, slackHeaders(eps.slack!.secret, body));
    expect(res.status).toBe(202);
    const row = await replyToOf(res.body.taskId);
    expect(row.reply_to).toEqual({ kind: "slack_thread", teamId: "T0ACME", channel: "C0ENG", threadTs: "1700000000.000100" });
    expect(row.input).toMatchObject({ source: "slack", event: "app_mention", delivery: "Ev0001" });
    // Slack's legacy verification token is a shared secret: the worker gets the body without it, and nothing else is lost.
    const { token: _legacy, ...withoutToken } = JSON.parse(body);
    expect(row.input.body).toEqual(withoutToken);
    expect(JSON.stringify(row.input)).not.toContain("legacy");
    expect((await bed.rt.pool.query("SELECT body_sha256 FROM ingest_deliveries WHERE delivery_id = 'Ev0001'")).rows[0].body_sha256).toBe(createHash("sha256").update(body).digest("hex"));
    // Slack retries with the same event_id.
    const retry = await bed.post(eps.slack!.id, body, { ...slackHeaders(eps.slack!.secret, body), "x-slack-retry-num": "1" });
    expect(retry).toEqual({ status: 200, body: { taskId: res.body.taskId, duplicate: true } });
  });

  it("Cairn (Standard Webhooks): an artifact event gets a cairn_comment; a stale webhook-timestamp is 401", async () => {
    const body = JSON.stringify({ type: "artifact.created", timestamp: new Date().toISOString(), instance: "https://cairn.example", data: { artifact: { id: "art_42" } } });
    const res = await bed.post(eps.cairn!.id, body, cairnHeaders(eps.cairn!.secret, body, "msg_1"));
    expect(res.status).toBe(202);
    expect((await replyToOf(res.body.taskId)).reply_to).toEqual({ kind: "cairn_comment", baseUrl: "https://cairn.example", artifactId: "art_42" });
    const stale = await bed.post(eps.cairn!.id, body, cairnHeaders(eps.cairn!.secret, body, "msg_2", new Date(Date.now() - 10 * 60_000)));
    expect(stale.status).toBe(401);
    expect(eps.cairn!.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
  });

  it("generic with a forge payload and forge headers: a task with NO reply address (reply_to NULL)", async () => {
    const body = JSON.stringify(issueComment);
    const headers = { ...(await githubHeaders(eps.github!.secret, body, "issue_comment", randomUUID())), "idempotency-key": "gen-1" };
    const res = await bed.post(eps.generic!.id, body, headers);
    expect(res.status).toBe(202);
    const row = await replyToOf(res.body.taskId);
    expect(row.reply_to).toBeNull();
    expect(row.input).toMatchObject({ source: "generic", event: "generic", delivery: "gen-1", body: issueComment });
    expect((await bed.post(eps.generic!.id, body, headers)).body).toEqual({ taskId: res.body.taskId, duplicate: true });
    // Without an idempotency header every delivery is its own task.
    const a = await bed.post(eps.generic!.id, "plain text");
    const b = await bed.post(eps.generic!.id, "plain text");
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(a.body.taskId).not.toBe(b.body.taskId);
    expect((await replyToOf(a.body.taskId)).input).toMatchObject({ body: "plain text", delivery: null });
    expect(await bed.rt.metrics.registry.metrics()).toMatch(/switchyard_ingest_deliveries_total\{source="generic",outcome="unverified_generic"\} 3/);
  });

  it("an oversized body is 413 and stores nothing (declared or streamed)", async () => {
    const before = await stored();
    const big = JSON.stringify({ blob: "x".repeat(70 * 1024) });
    const declared = await bed.post(eps.github!.id, big, await githubHeaders(eps.github!.secret, big, "issues", randomUUID()));
    expect(declared.status).toBe(413);
    const chunks = (async function* () {
      for (let i = 0; i < 100; i++) yield new TextEncoder().encode("y".repeat(1024));
    })();
    const streamed = await fetch(`${bed.gateway.url}/api/v1/ingest/${eps.generic!.id}`, { method: "POST", body: ReadableStream.from(chunks), duplex: "half" } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await stored()).toBe(before);
  });

  it("unknown and disabled endpoints answer the same 404", async () => {
    const unknown = await bed.post("AAAAAAAAAAAAAAAAAAAAAAAA", "{}");
    const created = await bed.ingest.create({ source: IngestSource.GENERIC, workflow: "triage" });
    await bed.ingest.disable({ id: created.endpoint!.id });
    const disabled = await bed.post(created.endpoint!.id, "{}");
    expect(unknown).toEqual({ status: 404, body: { error: "no such ingest endpoint" } });
    expect(disabled).toEqual(unknown);
    expect((await bed.post("short", "{}")).status).toBe(404);
    expect(await bed.count("SELECT count(*) AS n FROM ingest_deliveries WHERE endpoint_id = $1", [created.endpoint!.id])).toBe(0);
  });
});
