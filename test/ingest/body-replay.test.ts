/**
 * GitHub and Gitea sign the body but not the delivery id: a captured delivery resent under a fresh id (or another
 * event header) is a duplicate of the first delivery with that body — the first task or cause answered, nothing
 * stored, counted `duplicate` — even when the copies race each other through one starter batch.
 */
import { createRequire } from "node:module";
import { createHash, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestSource } from "../../src/gen/switchyard/api/v1/ingest_pb.js";
import { cairnHeaders, createIngestBed, giteaHeaders, githubHeaders, type IngestBed } from "./support.js";

const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as Array<{ name: string; examples: any[] }>;
const issueComment = examples.find((e) => e.name === "issue_comment")!.examples[0];
const ping = examples.find((e) => e.name === "ping")!.examples[0];
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("replayed GitHub / Gitea bodies", () => {
  let bed: IngestBed;
  const eps: Record<string, { id: string; secret: string }> = {};
  let nextId = 8_000_000;
  const freshComment = () => JSON.stringify({ ...issueComment, comment: { ...issueComment.comment, id: nextId++ } });
  const rowsOf = (endpointId: string) => bed.count("SELECT count(*) AS n FROM ingest_deliveries WHERE endpoint_id = $1", [endpointId]);
  const tasks = () => bed.count("SELECT count(*) AS n FROM tasks");
  const duplicates = async (source: string) => {
    const match = new RegExp(`switchyard_ingest_deliveries_total\\{source="${source}",outcome="duplicate"\\} (\\d+)`).exec(await bed.rt.metrics.registry.metrics());
    return Number(match?.[1] ?? 0);
  };

  beforeAll(async () => {
    bed = await createIngestBed();
    for (const [name, source] of [
      ["github", IngestSource.GITHUB],
      ["gitea", IngestSource.GITEA],
      ["cairn", IngestSource.CAIRN],
    ] as const) {
      const created = await bed.ingest.create({ source, workflow: "triage" });
      eps[name] = { id: created.endpoint!.id, secret: created.secret };
    }
  });
  afterAll(async () => {
    await bed?.cleanup();
  });

  it("GitHub: the same body under a fresh delivery id, or another event header, answers the first task and stores nothing", async () => {
    const body = freshComment();
    const first = await bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "issue_comment", randomUUID()));
    expect(first.status).toBe(202);
    const [rows, started, counted] = [await rowsOf(eps.github!.id), await tasks(), await duplicates("github")];

    const replay = await bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "issue_comment", randomUUID()));
    expect(replay).toEqual({ status: 200, body: { taskId: first.body.taskId, duplicate: true } });
    const otherEvent = await bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "issues", randomUUID()));
    expect(otherEvent).toEqual({ status: 200, body: { taskId: first.body.taskId, duplicate: true } });
    expect(await rowsOf(eps.github!.id)).toBe(rows);
    expect(await tasks()).toBe(started);
    expect(await duplicates("github")).toBe(counted + 2);
  });

  it("Gitea: the same", async () => {
    const body = JSON.stringify({ action: "created", issue: { number: 3 }, comment: { id: nextId++, body: "hi" }, repository: { full_name: "team/app", html_url: "https://git.example.org/team/app" } });
    const first = await bed.post(eps.gitea!.id, body, giteaHeaders(eps.gitea!.secret, body, "issue_comment", randomUUID()));
    expect(first.status).toBe(202);
    const replay = await bed.post(eps.gitea!.id, body, giteaHeaders(eps.gitea!.secret, body, "issue_comment", randomUUID()));
    expect(replay).toEqual({ status: 200, body: { taskId: first.body.taskId, duplicate: true } });
    expect(await rowsOf(eps.gitea!.id)).toBe(1);
  });

  it("copies of one body racing under different ids start ONE task and record one delivery", async () => {
    const body = freshComment();
    const headers = await Promise.all(Array.from({ length: 8 }, () => githubHeaders(eps.github!.secret, body, "issue_comment", randomUUID())));
    const rows = await rowsOf(eps.github!.id);
    const answers = await Promise.all(headers.map((h) => bed.post(eps.github!.id, body, h)));
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    expect(new Set(answers.map((a) => a.body.taskId)).size).toBe(1);
    expect(answers.filter((a) => a.status === 200).every((a) => a.body.duplicate === true)).toBe(true);
    expect(await bed.count("SELECT count(*) AS n FROM tasks WHERE idempotency_key = $1", [`ingest:${eps.github!.id}:body:${sha256(body)}`])).toBe(1);
    expect(await rowsOf(eps.github!.id)).toBe(rows + 1);
  });

  it("a replayed body that started nothing answers its first cause; racing copies record one row", async () => {
    const body = JSON.stringify({ ...ping, hook_id: nextId++ });
    const first = await bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "ping", randomUUID()));
    expect(first).toEqual({ status: 200, body: { cause: "ignored" } });
    const replay = await bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "ping", randomUUID()));
    expect(replay).toEqual({ status: 200, body: { cause: "ignored", duplicate: true } });
    // Nor does the event header (unsigned) turn it into work: the body was seen, whatever it is now called.
    const tasksBefore = await tasks();
    const renamed = await bed.post(eps.github!.id, body, await githubHeaders(eps.github!.secret, body, "issue_comment", randomUUID()));
    expect(renamed).toEqual({ status: 200, body: { cause: "ignored", duplicate: true } });
    expect(await tasks()).toBe(tasksBefore);
    expect(await bed.count("SELECT count(*) AS n FROM ingest_deliveries WHERE body_sha256 = $1", [sha256(body)])).toBe(1);

    const racing = JSON.stringify({ ...ping, hook_id: nextId++ });
    const headers = await Promise.all(Array.from({ length: 8 }, () => githubHeaders(eps.github!.secret, racing, "ping", randomUUID())));
    const answers = await Promise.all(headers.map((h) => bed.post(eps.github!.id, racing, h)));
    expect(answers.filter((a) => a.body.duplicate !== true)).toHaveLength(1);
    expect(await bed.count("SELECT count(*) AS n FROM ingest_deliveries WHERE body_sha256 = $1", [sha256(racing)])).toBe(1);
  });

  it("after 24 hours a body that started nothing is new again; one that started a task still names it", async () => {
    const quiet = JSON.stringify({ ...ping, hook_id: nextId++ });
    await bed.post(eps.github!.id, quiet, await githubHeaders(eps.github!.secret, quiet, "ping", randomUUID()));
    const started = freshComment();
    const first = await bed.post(eps.github!.id, started, await githubHeaders(eps.github!.secret, started, "issue_comment", randomUUID()));
    await bed.rt.pool.query("UPDATE ingest_deliveries SET received_at = now() - interval '25 hours' WHERE body_sha256 = ANY($1)", [[sha256(quiet), sha256(started)]]);

    expect(await bed.post(eps.github!.id, quiet, await githubHeaders(eps.github!.secret, quiet, "ping", randomUUID()))).toEqual({ status: 200, body: { cause: "ignored" } });
    // The task's idempotency key is the body's hash, so the task itself still answers.
    const late = await bed.post(eps.github!.id, started, await githubHeaders(eps.github!.secret, started, "issue_comment", randomUUID()));
    expect(late).toEqual({ status: 200, body: { taskId: first.body.taskId, duplicate: true } });
  });

  it("Cairn signs its delivery id: the same body under a new webhook-id is a new delivery (and its hash is stored)", async () => {
    const body = JSON.stringify({ type: "artifact.created", timestamp: new Date().toISOString(), instance: "https://cairn.example", data: { artifact: { id: "art_1" } } });
    const a = await bed.post(eps.cairn!.id, body, cairnHeaders(eps.cairn!.secret, body, "msg_a"));
    const b = await bed.post(eps.cairn!.id, body, cairnHeaders(eps.cairn!.secret, body, "msg_b"));
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.body.taskId).not.toBe(b.body.taskId);
    expect(await bed.count("SELECT count(*) AS n FROM ingest_deliveries WHERE endpoint_id = $1 AND body_sha256 = $2", [eps.cairn!.id, sha256(body)])).toBe(2);
  });
});
