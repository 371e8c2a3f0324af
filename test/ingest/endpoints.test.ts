/**
 * Ingest endpoints through the API: the secret shown once (create, rotate) and never again, rotation keeping the
 * previous secret valid, generic refusing rotation, no encryption key refusing verified sources, the workflow
 * checked at creation; tasks.reply_to immutable; no response, log line or metric carries a verification secret.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestSource } from "../../src/gen/switchyard/api/v1/ingest_pb.js";
import { createIngestBed, githubHeaders, slackHeaders, type IngestBed } from "./support.js";

async function refusal(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected a refusal");
}

describe("ingest endpoints", () => {
  let bed: IngestBed;
  const secrets: string[] = [];
  const responses: string[] = [];
  beforeAll(async () => {
    bed = await createIngestBed();
  });
  afterAll(async () => {
    await bed?.cleanup();
  });

  it("create answers the URL token, the URL and the secret once; list shows a fingerprint, never the secret", async () => {
    const created = await bed.ingest.create({ source: IngestSource.GITHUB, workflow: "triage@1" });
    secrets.push(created.secret);
    const endpoint = created.endpoint!;
    expect(endpoint.id).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(endpoint.url).toBe(`${bed.rt.config.gateway.publicUrl}/api/v1/ingest/${endpoint.id}`);
    expect(created.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(endpoint.secretFingerprint).toMatch(/^fp_[0-9a-f]{16}$/);
    const row = (await bed.rt.pool.query("SELECT secret_ciphertext FROM ingest_endpoints WHERE id = $1", [endpoint.id])).rows[0];
    expect(row.secret_ciphertext).not.toContain(created.secret);
    const listed = await bed.ingest.list({});
    responses.push(text(listed));
    expect(listed.endpoints.map((e) => e.id)).toEqual([endpoint.id]);
    expect(listed.endpoints[0]!.secretFingerprint).toBe(endpoint.secretFingerprint);
  });

  it("the workflow must exist; the source must be named", async () => {
    expect((await refusal(bed.ingest.create({ source: IngestSource.GITHUB, workflow: "nope" }))).code).toBe(Code.NotFound);
    expect((await refusal(bed.ingest.create({ source: IngestSource.GITHUB, workflow: "triage@9" }))).rawMessage).toMatch(/latest is triage@1/);
    expect((await refusal(bed.ingest.create({ source: IngestSource.UNSPECIFIED, workflow: "triage" }))).code).toBe(Code.InvalidArgument);
  });

  it("rotate: a new secret once; the previous one keeps verifying (24 h), the new one verifies", async () => {
    const created = await bed.ingest.create({ source: IngestSource.SLACK, workflow: "triage" });
    const id = created.endpoint!.id;
    const rotated = await bed.ingest.rotateSecret({ id });
    secrets.push(created.secret, rotated.secret);
    responses.push(text(rotated.endpoint));
    expect(rotated.secret).not.toBe(created.secret);
    expect(rotated.endpoint!.secretFingerprint).not.toBe(created.endpoint!.secretFingerprint);
    const grace = Number(rotated.endpoint!.previousSecretExpiresAt!.seconds) * 1000 - Date.now();
    expect(grace).toBeGreaterThan(23.9 * 3600_000);
    expect(grace).toBeLessThanOrEqual(24 * 3600_000);
    const event = (eventId: string) =>
      JSON.stringify({ type: "event_callback", team_id: "T1", event_id: eventId, event: { type: "message", channel: "C1", ts: "1700000000.000001" } });
    const old = event("Ev-old");
    expect((await bed.post(id, old, slackHeaders(created.secret, old))).status).toBe(202);
    const fresh = event("Ev-new");
    expect((await bed.post(id, fresh, slackHeaders(rotated.secret, fresh))).status).toBe(202);
    // Once the grace is over, the old one no longer verifies.
    await bed.rt.pool.query("UPDATE ingest_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1", [id]);
    const late = event("Ev-late");
    expect((await bed.post(id, late, slackHeaders(created.secret, late))).status).toBe(401);
  });

  it("rotate on generic is refused: its URL is its credential", async () => {
    const created = await bed.ingest.create({ source: IngestSource.GENERIC, workflow: "triage" });
    expect(created.secret).toBe("");
    expect(created.endpoint!.secretFingerprint).toBe("");
    const error = await refusal(bed.ingest.rotateSecret({ id: created.endpoint!.id }));
    expect(error.code).toBe(Code.FailedPrecondition);
    expect(error.rawMessage).toMatch(/URL is its credential/);
  });

  it("another tenant's endpoints are invisible and untouchable", async () => {
    const other = await createOther(bed);
    expect((await other.list({})).endpoints).toEqual([]);
    const mine = (await bed.ingest.list({})).endpoints[0]!;
    expect((await refusal(other.rotateSecret({ id: mine.id }))).code).toBe(Code.NotFound);
    expect((await refusal(other.disable({ id: mine.id }))).code).toBe(Code.NotFound);
  });

  it("tasks.reply_to cannot be updated: the database refuses, and no source statement updates it", async () => {
    const [ep] = (await bed.ingest.list({})).endpoints;
    const body = JSON.stringify({ action: "opened", issue: { number: 3 }, repository: { full_name: "acme/app", html_url: "https://github.com/acme/app" } });
    const secret = secrets[0]!;
    const res = await bed.post(ep!.id, body, await githubHeaders(secret, body, "issues", randomUUID()));
    expect(res.status).toBe(202);
    const hijack = JSON.stringify({ kind: "forge_comment", forge: "github", host: "evil.example", repository: "x/y", number: 1 });
    await expect(bed.rt.pool.query("UPDATE tasks SET reply_to = $2 WHERE id = $1", [res.body.taskId, hijack])).rejects.toThrow(/reply_to is immutable/);
    await expect(bed.rt.pool.query("UPDATE tasks SET reply_to = NULL WHERE id = $1", [res.body.taskId])).rejects.toThrow(/reply_to is immutable/);
    // Ordinary task updates (status, cost) still work.
    await bed.rt.pool.query("UPDATE tasks SET cost = cost WHERE id = $1", [res.body.taskId]);
    const offenders = sourceFiles("src").filter((file) => /UPDATE\s+tasks\b[^;`]*\breply_to\b/is.test(readFileSync(file, "utf8")));
    expect(offenders).toEqual([]);
  });

  it("no API response, log line or metric carries a verification secret", async () => {
    const logs = bed.logs.join("");
    const metrics = await bed.rt.metrics.registry.metrics();
    // The List answer as a curl user sees it on the wire.
    const wire = await fetch(`${bed.gateway.url}/switchyard.api.v1.IngestService/List`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${bed.key}` },
      body: "{}",
    });
    const listed = await wire.text();
    expect(listed).toContain("secretFingerprint");
    expect(secrets.length).toBeGreaterThanOrEqual(3);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(20);
      expect(logs).not.toContain(secret);
      expect(metrics).not.toContain(secret);
      expect(listed).not.toContain(secret);
      for (const r of responses) expect(r).not.toContain(secret);
    }
    expect(logs).toContain("ingest delivery started a task");
  });
});

describe("ingest endpoints without an encryption key", () => {
  let bed: IngestBed;
  beforeAll(async () => {
    bed = await createIngestBed({ encryption: false });
  });
  afterAll(async () => {
    await bed?.cleanup();
  });

  it("a verified source is refused (NO_ENCRYPTION_KEY), generic is created", async () => {
    for (const source of [IngestSource.GITHUB, IngestSource.GITEA, IngestSource.SLACK, IngestSource.CAIRN]) {
      const error = await refusal(bed.ingest.create({ source, workflow: "triage" }));
      expect(error.code).toBe(Code.FailedPrecondition);
      expect(error.rawMessage).toMatch(/SWITCHYARD_SECRET_ENCRYPTION_KEY/);
    }
    expect(await bed.count("SELECT count(*) AS n FROM ingest_endpoints")).toBe(0);
    const generic = await bed.ingest.create({ source: IngestSource.GENERIC, workflow: "triage" });
    expect((await bed.post(generic.endpoint!.id, "{}")).status).toBe(202);
  });
});

async function createOther(bed: IngestBed) {
  const { createTenantWithKey } = await import("../../src/tenancy/bootstrap.js");
  const { createClient } = await import("@connectrpc/connect");
  const { createApiTransport } = await import("../../src/cli/remote/transport.js");
  const { IngestService } = await import("../../src/gen/switchyard/api/v1/ingest_pb.js");
  const key = (await createTenantWithKey(bed.rt.stores, bed.rt.pool, { orgId: "other", name: "other" })).apiKey.secret;
  return createClient(IngestService, createApiTransport({ url: bed.gateway.url, token: key }));
}

function text(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? String(v) : v));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith(".ts") ? [path] : [];
  });
}
