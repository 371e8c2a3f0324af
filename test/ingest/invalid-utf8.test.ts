/**
 * Signatures are over the raw bytes, and every body must be strict UTF-8 (issue 26 §2). A lenient decode maps each
 * invalid byte to U+FFFD, so a verifier that MACs the decoded string accepts ~128 byte-variants of one signed body
 * containing "�" — each a new delivery by the raw-body hash the replay check uses. For every provider: the captured
 * signature does not verify any variant (401, nothing stored), and a body that is not UTF-8 is refused even when
 * its signature is right (400, nothing stored).
 */
import { createHmac, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEndpoints, createIngestBed, type IngestBed } from "./support.js";

type Provider = "github" | "gitea" | "slack" | "cairn";

/** Headers signing exactly these bytes, as each provider does. */
function signedHeaders(provider: Provider, secret: string, body: Buffer, id: string): Record<string, string> {
  const mac = (key: string | Buffer, ...parts: Array<string | Buffer>) => {
    const h = createHmac("sha256", key);
    for (const part of parts) h.update(part);
    return h;
  };
  switch (provider) {
    case "github":
      return { "x-github-event": "issue_comment", "x-github-delivery": id, "x-hub-signature-256": `sha256=${mac(secret, body).digest("hex")}` };
    case "gitea":
      return { "x-gitea-event": "issue_comment", "x-gitea-delivery": id, "x-gitea-signature": mac(secret, body).digest("hex") };
    case "slack": {
      const ts = String(Math.floor(Date.now() / 1000));
      return { "x-slack-request-timestamp": ts, "x-slack-signature": `v0=${mac(secret, `v0:${ts}:`, body).digest("hex")}` };
    }
    case "cairn": {
      const ts = String(Math.floor(Date.now() / 1000));
      const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
      return { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": `v1,${mac(key, `${id}.${ts}.`, body).digest("base64")}` };
    }
  }
}

const REPLACEMENT = Buffer.from("\uFFFD", "utf8");
/** Single bytes that are never valid UTF-8 on their own: continuation bytes, lead bytes without a tail, 0xFE/0xFF. */
const INVALID_BYTES = [0x80, 0x9f, 0xbf, 0xc0, 0xc1, 0xe0, 0xf5, 0xfe, 0xff];

function variant(body: Buffer, byte: number): Buffer {
  const at = body.indexOf(REPLACEMENT);
  return Buffer.concat([body.subarray(0, at), Buffer.from([byte]), body.subarray(at + REPLACEMENT.length)]);
}

describe("ingest bodies: raw-byte signatures, strict UTF-8", () => {
  let bed: IngestBed;
  let eps: Record<string, { id: string; secret: string }>;
  let n = 0;
  const bodyFor = (provider: Provider | "generic") =>
    Buffer.from(
      JSON.stringify(
        provider === "cairn"
          ? { type: "comment.created", timestamp: new Date().toISOString(), instance: "https://cairn.example", data: { n: n++, text: "look \uFFFD here" } }
          : provider === "slack"
          ? { type: "event_callback", event_id: `Ev${n++}`, team_id: "T1", event: { type: "app_mention", text: "look \uFFFD here", channel: "C1", ts: "1.2" } }
          : { action: "created", issue: { number: 7 }, comment: { id: 9_100_000 + n++, body: "look \uFFFD here" }, repository: { full_name: "team/app", html_url: "https://git.example.org/team/app" } },
      ),
    );
  const stored = () => bed.count("SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM ingest_deliveries) AS n");

  beforeAll(async () => {
    bed = await createIngestBed();
    eps = await createEndpoints(bed, ["github", "gitea", "slack", "cairn", "generic"] as const);
  });
  afterAll(async () => {
    await bed?.cleanup();
  });

  for (const provider of ["github", "gitea", "slack", "cairn"] as const) {
    it(`${provider}: a captured signature verifies none of the invalid-byte variants; a signed non-UTF-8 body is refused`, async () => {
      const { id, secret } = eps[provider]!;
      const body = bodyFor(provider);
      const headers = signedHeaders(provider, secret, body, randomUUID());
      const first = await bed.post(id, body, headers);
      expect(first.status, JSON.stringify(first.body)).toBeLessThan(300);
      const before = await stored();
      for (const byte of INVALID_BYTES) {
        const replay = await bed.post(id, variant(body, byte), headers);
        expect(replay.status, `variant 0x${byte.toString(16)}: ${JSON.stringify(replay.body)}`).toBe(401);
      }
      // Signed over the invalid bytes themselves (by someone holding the secret): still not a body we take.
      const bad = variant(bodyFor(provider), 0xff);
      const signedBad = await bed.post(id, bad, signedHeaders(provider, secret, bad, randomUUID()));
      expect(signedBad).toEqual({ status: 400, body: { error: "the body is not valid UTF-8" } });
      expect(await stored()).toBe(before);
    });
  }

  it("generic: a body that is not UTF-8 is refused, not stored with U+FFFD in it", async () => {
    const before = await stored();
    const answer = await bed.post(eps.generic!.id, variant(bodyFor("generic"), 0xc0));
    expect(answer).toEqual({ status: 400, body: { error: "the body is not valid UTF-8" } });
    expect(await stored()).toBe(before);
  });
});
