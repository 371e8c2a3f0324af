/**
 * The seed's confirmations end to end, on one runtime with everything real: a signed delivery reaches the gateway's
 * ingest route → a task with the reply address → the coordinator dispatches to a real harness → the handler's
 * `ctx.reply` goes over the bus to the coordinator, is governed and audited → the reply sender dials a provider stub
 * on loopback with the tenant's connection → our own comment, delivered back, starts nothing.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIngestEndpoint } from "../../src/ingest/endpoint-store.js";
import { createLogger } from "../../src/logger.js";
import { startGateway, type Gateway } from "../../src/gateway/server.js";
import type { ReplyOutcome } from "../../src/harness/index.js";
import { addConnection } from "../../src/vault/connection-store.js";
import { createSecretCipher, type SecretCipher } from "../../src/vault/secret-cipher.js";
import { createTenantWithKey } from "../../src/tenancy/bootstrap.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { githubHeaders, slackHeaders } from "../ingest/support.js";
import { startProviderStub, type ProviderStub } from "../support/provider-stubs.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";

const WORKFLOW = 'name: answer\nsteps:\n  - { id: answer, to: "role:answerer" }\n';
const SLACK_TOKEN = `xoxb-${randomBytes(12).toString("hex")}`;
const GITHUB_TOKEN = `ghp_${randomBytes(18).toString("hex")}`;

describe("origin replies, end to end", () => {
  let rt: TestRuntime;
  let gateway: Gateway;
  let workers: Workers;
  let cipher: SecretCipher;
  let slack: ProviderStub;
  let github: ProviderStub;
  const logs: string[] = [];
  /** Every secret the test makes; none may appear anywhere but where it is configured. */
  const secrets: string[] = [SLACK_TOKEN, GITHUB_TOKEN];
  const endpoints: Record<string, { id: string; secret: string | null; orgId: string }> = {};

  beforeAll(async () => {
    const key = { id: "e2e", key: randomBytes(32) };
    cipher = createSecretCipher([key])!;
    const destination = new Writable({
      write(chunk, _encoding, done) {
        logs.push(String(chunk));
        done();
      },
    });
    rt = await createTestRuntime({
      logger: createLogger({ level: "debug", destination }),
      flags: { replyEnabled: true, replyTenants: "*" },
      configure: (config) => ({
        ...config,
        origin: { ...config.origin, encryptionKeys: [key], replyTimeoutMs: 3_000 },
        // The provider stubs listen on loopback, which the egress guard refuses unless the operator admits it.
        foreign: { ...config.foreign, allowedNetworks: ["127.0.0.0/8"] },
      }),
    });
    rt.startCoordinator({ background: [rt.replies.job] });
    gateway = await startGateway(rt, { port: 0, host: "127.0.0.1", ingestCacheTtlMs: 0, collectMetrics: false, shutdownGraceMs: 1000 });
    workers = new Workers(rt);
    workers.start("answerer", async (work, ctx) => {
      const first: ReplyOutcome = await ctx.reply(`Looked into it (${work.replyTo?.display ?? "no address"}).`, { idempotencyKey: "final" });
      // A retried tool call: same key, so nothing is posted again and the first outcome comes back.
      const again: ReplyOutcome = await ctx.reply("Looked into it, again.", { idempotencyKey: "final" });
      return { first, again };
    });

    slack = await startProviderStub("slack", { token: SLACK_TOKEN, botId: "B0SWITCH", appId: "A0SWITCH", teamId: "T0ACME" });
    github = await startProviderStub("github", { token: GITHUB_TOKEN });
    for (const orgId of ["acme", "beta"]) {
      await createTenantWithKey(rt.stores, rt.pool, { orgId, name: orgId });
      await submitWorkflow(rt.pool, orgId, parseWorkflowDefinition(WORKFLOW));
    }
    // Only acme holds credentials: a Slack workspace and the forge the GitHub stub stands for.
    await addConnection(rt.stores, rt.pool, cipher, "acme", { kind: "slack", accountKey: "T0ACME", apiBaseUrl: slack.apiBaseUrl, secret: SLACK_TOKEN }, { actor: "test" });
    await addConnection(rt.stores, rt.pool, cipher, "acme", { kind: "github", accountKey: new URL(github.origin).host, apiBaseUrl: github.apiBaseUrl, secret: GITHUB_TOKEN }, { actor: "test" });
    for (const [name, orgId, source] of [
      ["acme-slack", "acme", "slack"],
      ["acme-github", "acme", "github"],
      ["acme-generic", "acme", "generic"],
      ["beta-github", "beta", "github"],
    ] as const) {
      const created = await createIngestEndpoint(rt.stores.ingestEndpoints, rt.pool, cipher, orgId, { source, workflow: "answer" });
      endpoints[name] = { id: created.endpoint.id, secret: created.secret, orgId };
      if (created.secret) secrets.push(created.secret);
    }
  });
  afterAll(async () => {
    await workers?.stop();
    await gateway?.close();
    await rt?.cleanup();
    await slack?.close();
    await github?.close();
  });

  async function deliver(endpoint: string, body: string, headers: Record<string, string>): Promise<{ status: number; body: { taskId?: string; cause?: string; duplicate?: boolean } }> {
    const res = await fetch(`${gateway.url}/api/v1/ingest/${endpoints[endpoint]!.id}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
    return { status: res.status, body: (await res.json()) as { taskId?: string } };
  }

  async function outcomeOf(orgId: string, taskId: string): Promise<{ first: ReplyOutcome; again: ReplyOutcome }> {
    const task = await waitForTask(rt.tasks, orgId, taskId);
    expect(task.status).toBe("completed");
    return task.steps[0]!.output as { first: ReplyOutcome; again: ReplyOutcome };
  }

  function issueComment(host: string, commentId: number, number = 7): Record<string, unknown> {
    return {
      action: "created",
      issue: { number, title: "It broke", html_url: `http://${host}/acme/app/issues/${number}` },
      comment: { id: commentId, body: "@bot please look", html_url: `http://${host}/acme/app/issues/${number}#issuecomment-${commentId}` },
      repository: { full_name: "acme/app", html_url: `http://${host}/acme/app` },
      sender: { login: "ann" },
    };
  }

  it("(1) a verified Slack event_callback yields a slack_thread task; reply posts once in that thread with the tenant's connection", async () => {
    const body = JSON.stringify({
      type: "event_callback",
      team_id: "T0ACME",
      event_id: `Ev${randomUUID().slice(0, 8)}`,
      event: { type: "app_mention", channel: "C0GENERAL", user: "U0ANN", text: "<@B0SWITCH> status?", ts: "1700000000.000100" },
    });
    const delivered = await deliver("acme-slack", body, slackHeaders(endpoints["acme-slack"]!.secret!, body));
    expect(delivered.status).toBe(202);
    const view = await rt.tasks.get("acme", delivered.body.taskId!);
    expect(view.replyTo).toEqual({ kind: "slack_thread", display: "slack T0ACME C0GENERAL thread 1700000000.000100" });

    const { first, again } = await outcomeOf("acme", delivered.body.taskId!);
    expect(first).toMatchObject({ status: "sent" });
    expect(first.permalink).toMatch(/^http/);
    expect(again).toEqual(first);
    const posts = slack.requests.filter((r) => r.path.endsWith("/chat.postMessage"));
    expect(posts).toHaveLength(1);
    expect(posts[0]!.headers.authorization).toBe(`Bearer ${SLACK_TOKEN}`);
    expect(JSON.parse(posts[0]!.body)).toMatchObject({ channel: "C0GENERAL", thread_ts: "1700000000.000100", text: expect.stringContaining("slack T0ACME C0GENERAL") });
  });

  it("(2) a generic delivery carrying a forge payload gets no address, and reply returns no_reply_address without a dial", async () => {
    const before = github.requests.length;
    const body = JSON.stringify(issueComment(new URL(github.origin).host, 1));
    const delivered = await deliver("acme-generic", body, { "x-github-event": "issue_comment", "x-github-delivery": randomUUID(), "idempotency-key": randomUUID() });
    expect(delivered.status).toBe(202);
    const { rows } = await rt.pool.query("SELECT reply_to FROM tasks WHERE id = $1", [delivered.body.taskId]);
    expect(rows[0].reply_to).toBeNull();
    const { first } = await outcomeOf("acme", delivered.body.taskId!);
    expect(first).toMatchObject({ status: "refused", code: "no_reply_address" });
    expect(github.requests.length).toBe(before);
  });

  it("(3) tenant B's task never uses tenant A's connection: no_connection, no dial", async () => {
    const before = github.requests.length;
    const body = JSON.stringify(issueComment(new URL(github.origin).host, 2));
    const delivered = await deliver("beta-github", body, await githubHeaders(endpoints["beta-github"]!.secret!, body, "issue_comment", randomUUID()));
    expect(delivered.status).toBe(202);
    const { first } = await outcomeOf("beta", delivered.body.taskId!);
    expect(first).toMatchObject({ status: "refused", code: "no_connection" });
    expect(github.requests.length).toBe(before);
  });

  it("(4) a payload naming another forge host than the connection's never causes a dial", async () => {
    const before = github.requests.length;
    const body = JSON.stringify(issueComment("github.evil.example", 3));
    const delivered = await deliver("acme-github", body, await githubHeaders(endpoints["acme-github"]!.secret!, body, "issue_comment", randomUUID()));
    expect(delivered.status).toBe(202);
    const { first } = await outcomeOf("acme", delivered.body.taskId!);
    expect(first).toMatchObject({ status: "refused", code: "no_connection" });
    expect(github.requests.length).toBe(before);
  });

  it("(5) with no encryption key, creating a connection is refused and nothing is stored", async () => {
    await expect(
      addConnection(rt.stores, rt.pool, undefined, "beta", { kind: "github", accountKey: "github.com", secret: "ghp_never_stored" }, { actor: "test" }),
    ).rejects.toThrow(/SWITCHYARD_SECRET_ENCRYPTION_KEY/);
    const { rows } = await rt.pool.query("SELECT count(*)::int AS n FROM connections WHERE org_id = 'beta'");
    expect(rows[0].n).toBe(0);
  });

  it("(6) our own posted comment, delivered back by the forge, starts no task", async () => {
    const host = new URL(github.origin).host;
    const body = JSON.stringify(issueComment(host, 4));
    const delivered = await deliver("acme-github", body, await githubHeaders(endpoints["acme-github"]!.secret!, body, "issue_comment", randomUUID()));
    const { first } = await outcomeOf("acme", delivered.body.taskId!);
    expect(first).toMatchObject({ status: "sent" });
    const posted = github.created.at(-1)!;
    expect(github.requests.at(-1)!.headers.authorization).toMatch(new RegExp(`${GITHUB_TOKEN}$`));
    expect(github.requests.at(-1)!.path).toBe("/repos/acme/app/issues/7/comments");

    const tasksBefore = (await rt.pool.query("SELECT count(*)::int AS n FROM tasks")).rows[0].n;
    const echo = { ...issueComment(host, Number(posted.id)), comment: { id: Number(posted.id), body: posted.text, html_url: posted.permalink } };
    const echoBody = JSON.stringify(echo);
    const delivery = randomUUID();
    const back = await deliver("acme-github", echoBody, await githubHeaders(endpoints["acme-github"]!.secret!, echoBody, "issue_comment", delivery));
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ cause: "self_reply" });
    expect((await rt.pool.query("SELECT count(*)::int AS n FROM tasks")).rows[0].n).toBe(tasksBefore);
    const recorded = await rt.pool.query("SELECT cause, task_id FROM ingest_deliveries WHERE delivery_id = $1", [delivery]);
    expect(recorded.rows).toEqual([{ cause: "self_reply", task_id: null }]);
  });

  it("(7) no API response, log line, audit row, reply row or metric contains a connection or ingest secret", async () => {
    const key = (await createTenantWithKey(rt.stores, rt.pool, { orgId: "gamma", name: "gamma" })).apiKey.secret;
    const responses: string[] = [];
    for (const task of (await rt.pool.query<{ id: string; org_id: string }>("SELECT id, org_id FROM tasks WHERE org_id = 'acme'")).rows) {
      responses.push(JSON.stringify(await rt.tasks.get(task.org_id, task.id)));
    }
    const listed = await fetch(`${gateway.url}/switchyard.api.v1.ConnectionService/List`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: "{}",
    });
    responses.push(await listed.text());
    const metrics = await rt.metrics.registry.metrics();
    const dump = async (sql: string) => JSON.stringify((await rt.pool.query(sql)).rows);
    const haystacks = {
      logs: logs.join("\n"),
      responses: responses.join("\n"),
      metrics,
      audit: await dump("SELECT * FROM audit_log"),
      replies: await dump("SELECT * FROM origin_replies"),
      tasks: await dump("SELECT * FROM tasks"),
      deliveries: await dump("SELECT * FROM ingest_deliveries"),
    };
    expect(haystacks.logs.length).toBeGreaterThan(1000);
    expect(haystacks.audit).toContain("origin_reply");
    for (const secret of secrets) {
      for (const [where, text] of Object.entries(haystacks)) expect(text.includes(secret), `a secret found in ${where}`).toBe(false);
    }
  });
});
