/**
 * deriveReplyAddress over real GitHub payloads (@octokit/webhooks-examples) and Slack / Gitea / Cairn shapes.
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { deriveReplyAddress } from "../../src/ingest/reply-address-parsers.js";
import { echoProbe } from "../../src/ingest/echo.js";
import { validateAddress } from "../../src/core/reply-address.js";

const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as Array<{ name: string; examples: any[] }>;
const of = (name: string) => examples.find((e) => e.name === name)!.examples;

describe("GitHub fixtures", () => {
  const conversations = ["issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment"];
  for (const event of conversations) {
    it(`${event}: every example yields a forge_comment naming its repository and number`, () => {
      expect(of(event).length).toBeGreaterThan(0);
      for (const body of of(event)) {
        const address = deriveReplyAddress("github", event, body);
        const number = body.issue?.number ?? body.pull_request?.number ?? body.number;
        expect(address).toEqual({
          kind: "forge_comment",
          forge: "github",
          host: new URL(body.repository.html_url).host.toLowerCase(),
          repository: body.repository.full_name,
          number,
        });
        expect(validateAddress(address)).toEqual(address);
      }
    });
  }

  it("issue_comment of Codertocat/Hello-World#1 on github.com", () => {
    expect(deriveReplyAddress("github", "issue_comment", of("issue_comment")[0])).toEqual({
      kind: "forge_comment",
      forge: "github",
      host: "github.com",
      repository: "Codertocat/Hello-World",
      number: 1,
    });
  });

  it("push, ping, release and the rest yield none", () => {
    for (const event of ["push", "ping", "release", "create", "star"]) {
      for (const body of of(event)) expect(deriveReplyAddress("github", event, body)).toBeNull();
    }
  });

  it("a conversation event under another event name yields none; a host is lower-cased; a hostile repository name yields none", () => {
    const body = structuredClone(of("issue_comment")[0]);
    expect(deriveReplyAddress("github", "push", body)).toBeNull();
    body.repository.html_url = "https://GHE.Example.COM/acme/app";
    expect(deriveReplyAddress("github", "issue_comment", body)).toMatchObject({ host: "ghe.example.com" });
    body.repository.full_name = "acme/../../orgs";
    expect(deriveReplyAddress("github", "issue_comment", body)).toBeNull();
  });

  it("generic gets no address even with a GitHub body", () => {
    for (const body of of("issue_comment")) expect(deriveReplyAddress("generic", "issue_comment", body)).toBeNull();
  });

  it("the echo probe of an issue_comment: its comment id on its host, and its words' sha256 at its address", () => {
    const body = of("issue_comment")[0];
    expect(echoProbe("github", "issue_comment", body)).toEqual({
      account: { kind: "github", accountKey: "github.com" },
      providerIds: [String(body.comment.id)],
      text: { addressDisplay: "github.com/Codertocat/Hello-World#1", textSha256: createHash("sha256").update(Buffer.from(body.comment.body, "utf8")).digest("hex") },
    });
    // The exact UTF-8 text: not trimmed, not normalised.
    const accented = { ...body, comment: { ...body.comment, body: "Café ✓ " } };
    expect(echoProbe("github", "issue_comment", accented)!.text!.textSha256).toBe(createHash("sha256").update(Buffer.from("Café ✓ ", "utf8")).digest("hex"));
    expect(echoProbe("github", "issues", of("issues")[0])).toBeUndefined();
    expect(echoProbe("generic", "issue_comment", body)).toBeUndefined();
  });
});

describe("Gitea", () => {
  it("issue_comment on a self-hosted host with a port", () => {
    const body = { action: "created", issue: { number: 7 }, comment: { id: 99 }, repository: { full_name: "team/app", html_url: "https://git.example.org:3000/team/app" } };
    expect(deriveReplyAddress("gitea", "issue_comment", body)).toEqual({ kind: "forge_comment", forge: "gitea", host: "git.example.org:3000", repository: "team/app", number: 7 });
  });
  it("pull_request with a top-level number only", () => {
    const body = { action: "opened", number: 12, repository: { full_name: "team/app", html_url: "https://git.example.org/team/app" } };
    expect(deriveReplyAddress("gitea", "pull_request", body)).toMatchObject({ number: 12 });
  });
});

describe("Slack", () => {
  const callback = (event: Record<string, unknown>) => ({ type: "event_callback", team_id: "T0001", event_id: "Ev1", event });
  it("a top-level channel message: the thread is its own ts", () => {
    expect(deriveReplyAddress("slack", "message", callback({ type: "message", channel: "C0001", ts: "1700000000.000100", text: "hi" }))).toEqual({
      kind: "slack_thread",
      teamId: "T0001",
      channel: "C0001",
      threadTs: "1700000000.000100",
    });
  });
  it("a reply in a thread and an app_mention: the thread's ts", () => {
    const reply = callback({ type: "message", channel: "C0001", ts: "1700000001.000200", thread_ts: "1700000000.000100" });
    expect(deriveReplyAddress("slack", "message", reply)).toMatchObject({ threadTs: "1700000000.000100" });
    const mention = callback({ type: "app_mention", channel: "C0002", ts: "1700000002.000300", user: "U1" });
    expect(deriveReplyAddress("slack", "app_mention", mention)).toMatchObject({ channel: "C0002", threadTs: "1700000002.000300" });
  });
  it("edits, deletions, reactions and other types yield none", () => {
    expect(deriveReplyAddress("slack", "message", callback({ type: "message", subtype: "message_changed", channel: "C1", ts: "1.2" }))).toBeNull();
    expect(deriveReplyAddress("slack", "reaction_added", callback({ type: "reaction_added", item: { channel: "C1", ts: "1.2" } }))).toBeNull();
    expect(deriveReplyAddress("slack", "message", { type: "url_verification", challenge: "x" })).toBeNull();
    expect(deriveReplyAddress("slack", "message", callback({ type: "message", channel: "#general", ts: "1.2" }))).toBeNull();
  });
  it("the echo probe carries the team, ts, bot_id and app_id, and the text hashed at the thread's address", () => {
    expect(echoProbe("slack", "message", callback({ type: "message", channel: "C0001", ts: "1700000001.000200", thread_ts: "1700000000.000100", text: "done" }))).toEqual({
      account: { kind: "slack", accountKey: "T0001" },
      providerIds: ["1700000001.000200"],
      text: { addressDisplay: "slack T0001 C0001 thread 1700000000.000100", textSha256: createHash("sha256").update("done").digest("hex") },
    });
    expect(echoProbe("slack", "message", callback({ type: "message", channel: "C1", ts: "1.2", bot_id: "B1", app_id: "A1" }))).toEqual({
      account: { kind: "slack", accountKey: "T0001" },
      providerIds: ["1.2"],
      slackBotId: "B1",
      slackAppId: "A1",
    });
  });
});

describe("Cairn", () => {
  const artifact = { type: "artifact.created", timestamp: "2026-12-01T00:00:00Z", instance: "https://Cairn.Example/", data: { artifact: { id: "art_123" } } };
  it("artifact events: the instance's origin and the artifact id", () => {
    expect(deriveReplyAddress("cairn", "artifact.created", artifact)).toEqual({ kind: "cairn_comment", baseUrl: "https://cairn.example", artifactId: "art_123" });
    expect(deriveReplyAddress("cairn", "artifact.updated", { ...artifact, instance: "https://cairn.example/some/path" })).toMatchObject({ baseUrl: "https://cairn.example" });
  });
  it("other events, bad ids and URLs with credentials yield none", () => {
    expect(deriveReplyAddress("cairn", "comment.created", artifact)).toBeNull();
    expect(deriveReplyAddress("cairn", "artifact.created", { ...artifact, data: { artifact: { id: "../x" } } })).toBeNull();
    expect(deriveReplyAddress("cairn", "artifact.created", { ...artifact, instance: "https://u:p@cairn.example" })).toBeNull();
    expect(deriveReplyAddress("cairn", "artifact.created", { ...artifact, instance: "ftp://cairn.example" })).toBeNull();
  });
  it("the echo probe of a comment event is its comment id", () => {
    expect(echoProbe("cairn", "comment.created", { type: "comment.created", instance: "https://Cairn.Example", data: { comment: { id: "cmt_1", body: "x" } } })).toEqual({
      account: { kind: "cairn", accountKey: "https://cairn.example" },
      providerIds: ["cmt_1"],
    });
    // Without its instance a comment id cannot be told apart from another instance's: nothing to look for.
    expect(echoProbe("cairn", "comment.created", { type: "comment.created", data: { comment: { id: "cmt_1" } } })).toBeUndefined();
    const onArtifact = { ...artifact, type: "artifact.commented", data: { artifact: { id: "art_123" }, comment: { id: "cmt_2", body: "done" } } };
    expect(echoProbe("cairn", "artifact.commented", onArtifact)).toMatchObject({ text: { addressDisplay: "https://cairn.example/artifacts/art_123", textSha256: createHash("sha256").update("done").digest("hex") } });
  });
});
