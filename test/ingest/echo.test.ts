/**
 * Echo suppression through the gateway (src/ingest/echo.ts): our own reply coming back starts no task, recognised
 * by its provider id on a connection of the same kind and account, by its words at the same address while the
 * reply is still dialing (or ended unknown), or by our Slack bot; nothing else is suppressed.
 */
import { createRequire } from "node:module";
import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestSource } from "../../src/gen/switchyard/api/v1/ingest_pb.js";
import { createTenant } from "../../src/tenancy/tenants.js";
import { createIngestBed, giteaHeaders, githubHeaders, slackHeaders, type IngestBed } from "./support.js";

const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as Array<{ name: string; examples: any[] }>;
const issueComment = examples.find((e) => e.name === "issue_comment")!.examples[0];
/** issueComment's address: github.com/Codertocat/Hello-World#1. */
const GITHUB_ADDRESS = "github.com/Codertocat/Hello-World#1";
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

describe("echo suppression", () => {
  let bed: IngestBed;
  let seedTask: string;
  const eps: Record<string, { id: string; secret: string }> = {};
  const connections: Record<string, string> = {};
  let nextId = 9_000_000;

  const connection = async (orgId: string, kind: string, accountKey: string, bot: { botId?: string; appId?: string } = {}) => {
    const id = randomUUID();
    await bed.rt.pool.query(
      `INSERT INTO connections (id, org_id, kind, account_key, api_base_url, secret_ciphertext, secret_fingerprint, created_by, bot_id, app_id)
       VALUES ($1, $2, $3, $4, 'https://api.example', 'x', 'fp_x', 'test', $5, $6)`,
      [id, orgId, kind, accountKey, bot.botId ?? null, bot.appId ?? null],
    );
    return id;
  };
  const reply = async (r: { orgId?: string; connectionId: string; state: string; text: string; addressDisplay: string; providerId?: string; minutesAgo?: number }) => {
    await bed.rt.pool.query(
      `INSERT INTO origin_replies (id, org_id, task_id, request_id, actor, idempotency_key, connection_id, state, address_kind, address_display, text, text_sha256,
                                   provider_id, created_at)
       VALUES ($1, $2, $3, $4, 'worker:triage', $4, $5, $6, 'forge_comment', $7, $8, $9, $10, now() - make_interval(mins => $11))`,
      [randomUUID(), r.orgId ?? "acme", seedTask, randomUUID(), r.connectionId, r.state, r.addressDisplay, r.text, sha256(r.text), r.providerId ?? null, r.minutesAgo ?? 0],
    );
  };
  const githubComment = async (id: number, text: string, number = 1) => {
    const body = JSON.stringify({ ...issueComment, issue: { ...issueComment.issue, number }, comment: { ...issueComment.comment, id, body: text } });
    return bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "issue_comment", randomUUID()));
  };
  const giteaComment = (host: string, id: number, text: string) => {
    const body = JSON.stringify({ action: "created", issue: { number: 3 }, comment: { id, body: text }, repository: { full_name: "team/app", html_url: `https://${host}/team/app` } });
    return bed.post(eps.gitea!.id, body, giteaHeaders(eps.gitea!.secret, body, "issue_comment", randomUUID()));
  };
  const SELF = { status: 200, body: { cause: "self_reply" } };

  beforeAll(async () => {
    bed = await createIngestBed();
    for (const [name, source] of [
      ["github", IngestSource.GITHUB],
      ["gitea", IngestSource.GITEA],
      ["slack", IngestSource.SLACK],
      ["generic", IngestSource.GENERIC],
    ] as const) {
      const created = await bed.ingest.create({ source, workflow: "triage" });
      eps[name] = { id: created.endpoint!.id, secret: created.secret };
    }
    seedTask = (await bed.post(eps.generic!.id, "{}")).body.taskId;
    await createTenant(bed.rt.stores.tenants, bed.rt.pool, { orgId: "beta", name: "beta" });
    connections.github = await connection("acme", "github", "github.com");
    connections.giteaA = await connection("acme", "gitea", "git-a.example");
    connections.giteaB = await connection("acme", "gitea", "git-b.example");
    connections.slack = await connection("acme", "slack", "T0ACME", { botId: "B0OURS", appId: "A0OURS" });
    connections.betaGithub = await connection("beta", "github", "github.com");
  });
  afterAll(async () => {
    await bed?.cleanup();
  });

  it("a comment id is ours only on a connection of the same kind and account, and only in this tenant", async () => {
    await reply({ connectionId: connections.github!, state: "sent", text: "github reply", addressDisplay: GITHUB_ADDRESS, providerId: "5001" });
    expect(await githubComment(5001, "a human's words")).toEqual(SELF);

    // Self-hosted forges number comments 1, 2, 3…: our comment 7 on git-a says nothing about comment 7 on git-b.
    await reply({ connectionId: connections.giteaA!, state: "sent", text: "gitea reply", addressDisplay: "git-a.example/team/app#3", providerId: "7" });
    expect((await giteaComment("git-b.example", 7, "a human on b")).status).toBe(202);
    expect(await giteaComment("git-a.example", 7, "the echo on a")).toEqual(SELF);
    // Nor does a github.com comment with the id of our Gitea reply.
    expect((await githubComment(7, "a human on github.com")).status).toBe(202);

    // The same id recorded by ANOTHER tenant says nothing about this one.
    await reply({ orgId: "beta", connectionId: connections.betaGithub!, state: "sent", text: "beta reply", addressDisplay: GITHUB_ADDRESS, providerId: "5002" });
    expect((await githubComment(5002, "a human's other words")).status).toBe(202);
    // A reply not yet sent has no provider id that counts.
    await reply({ connectionId: connections.github!, state: "failed", text: "failed reply", addressDisplay: GITHUB_ADDRESS, providerId: "5003" });
    expect((await githubComment(5003, "yet other words")).status).toBe(202);
  });

  it("the words of a dialing, sent or unknown reply at the same address, within 15 minutes, are ours (the webhook beat the provider id)", async () => {
    for (const state of ["dialing", "sent", "unknown"]) {
      const text = `Triage (${state}): looks like a bug in the parser.\n\n— switchyard ✓`;
      await reply({ connectionId: connections.github!, state, text, addressDisplay: GITHUB_ADDRESS });
      expect(await githubComment(nextId++, text)).toEqual(SELF);
    }
  });

  it("the same words are a human's at another address, in another state, after 15 minutes, in another tenant, or altered", async () => {
    const text = "Thanks, closing this.";
    await reply({ connectionId: connections.github!, state: "dialing", text, addressDisplay: GITHUB_ADDRESS });
    expect((await githubComment(nextId++, text, 2)).status).toBe(202); // issue #2
    expect((await githubComment(nextId++, `${text} `)).status).toBe(202); // not the exact text

    const stale = "Stale words.";
    await reply({ connectionId: connections.github!, state: "dialing", text: stale, addressDisplay: GITHUB_ADDRESS, minutesAgo: 16 });
    expect((await githubComment(nextId++, stale)).status).toBe(202);

    for (const state of ["pending", "failed", "refused", "parked"]) {
      const words = `words of a ${state} reply`;
      await reply({ connectionId: connections.github!, state, text: words, addressDisplay: GITHUB_ADDRESS });
      expect((await githubComment(nextId++, words)).status).toBe(202);
    }

    const beta = "beta's words";
    await reply({ orgId: "beta", connectionId: connections.betaGithub!, state: "dialing", text: beta, addressDisplay: GITHUB_ADDRESS });
    expect((await githubComment(nextId++, beta)).status).toBe(202);
  });

  it("Slack: our bot's message, and a dialing reply's words in the same thread, start nothing", async () => {
    const slack = (eventId: string, event: Record<string, unknown>) => {
      const body = JSON.stringify({ type: "event_callback", team_id: "T0ACME", event_id: eventId, event: { type: "message", channel: "C0ENG", ...event } });
      return bed.post(eps.slack!.id, body, slackHeaders(eps.slack!.secret, body));
    };
    expect(await slack("Ev-bot", { ts: "1700000009.000100", bot_id: "B0OURS", text: "done" })).toEqual(SELF);

    await reply({ connectionId: connections.slack!, state: "dialing", text: "On it — <https://example.com|details>", addressDisplay: "slack T0ACME C0ENG thread 1700000000.000100" });
    expect(await slack("Ev-words", { ts: "1700000010.000100", thread_ts: "1700000000.000100", text: "On it — <https://example.com|details>" })).toEqual(SELF);
    expect((await slack("Ev-other-thread", { ts: "1700000011.000100", thread_ts: "1700000000.000999", text: "On it — <https://example.com|details>" })).status).toBe(202);
  });
});
