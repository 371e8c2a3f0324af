/**
 * The secret scan's variants (src/replies/secret-variants.ts) and the one-lint shortcut in secret-scan.ts: linting
 * the text and its variants joined reports what linting each alone would, no pattern crosses the separator, and the
 * variants stay within their bounds whatever the text.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { firstSecretRule, scanForSecrets, SEPARATOR } from "../../src/replies/secret-scan.js";
import { normalise, secretVariants, VARIANT_LIMITS } from "../../src/replies/secret-variants.js";

const TOKEN = `ghp_${"Xk9mQ2vR7tLp".repeat(3)}`;
const AWS_SECRET = `aws_secret_access_key = ${"wJalrXUtnFEMIK7MDENGbPxRfiCYzq9f8d7e6c5b"}`;
const SLACK = `xoxb-123456789012-1234567890123-${"AbCdEfGhIjKlMnOpQrStUvWx"}`;
const NPM = `npm_${"Ab3dE5gH7jK9".repeat(3)}`;
const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${("MIIEowIBAAKCAQEA" + "x7Vb3kQ9pL2mN8rT5wY1zC4fH6jK0sD3gA9qW2eR7tY5uI8oP1lZ4xC6vB9nM3".repeat(3)).match(/.{1,64}/g)!.join("\n")}\n-----END RSA PRIVATE KEY-----`;
const POSTGRES = "postgres://admin:S3cr3tPassw0rd@db.example.com:5432/app";
const BASIC = "https://deploy:hunter2pass@example.com/path";
const K16 = 16 * 1024;

const b64 = (s: string): string => Buffer.from(s).toString("base64");
const reversed = (s: string): string => [...s].reverse().join("");
const chars = (variants: string[]): number => variants.reduce((n, v) => n + v.length, 0);
/** Cut to the reply cap in UTF-8 bytes. */
const capped = (s: string): string => {
  let t = s;
  while (Buffer.byteLength(t) > K16) t = t.slice(0, t.length - 64);
  return t;
};

describe("secret variants", () => {
  it("normalises compatibility forms and drops invisible characters", () => {
    expect(normalise("ｇｈｐ＿ab\u200bc\u00ad\u2060d\ufeff\u200e")).toBe("ghp_abcd");
    expect(normalise("plain text stays\nas it is")).toBe("plain text stays\nas it is");
  });

  it("glues the pieces of a token split over lines, on its own line", () => {
    const variants = secretVariants(`the token is\n${TOKEN.slice(0, 10)}\n${TOKEN.slice(10, 25)}\n${TOKEN.slice(25)}\nthanks a lot`);
    expect(variants).toContain(TOKEN);
  });

  it("adds nothing for plain ASCII prose on one line but its reversal", () => {
    const text = "Triage done: the failing test is flaky on loaded runners; a fix is in review.";
    expect(secretVariants(text)).toEqual([reversed(text)]);
  });

  it("is deterministic", () => {
    const text = `a ${b64(TOKEN)}\nb%20c ${TOKEN.slice(0, 9)}\n${TOKEN.slice(9)}`;
    expect(secretVariants(text)).toEqual(secretVariants(text));
  });

  describe("one lint of the joined parts answers as the first part that matches alone", () => {
    const corpus: string[] = [
      TOKEN,
      `prose first, then ${b64(TOKEN)} and ${reversed(SLACK)}`,
      `${reversed(TOKEN)}\n${AWS_SECRET}`,
      `ok ${b64(PEM)}`,
      `${POSTGRES.slice(0, 20)}\n${POSTGRES.slice(20)} and ${BASIC}`,
      `npm: ${b64(b64(NPM))}`,
      `nothing here, but a sha 3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345 and ${b64("harmless words, nothing secret")}`,
      PEM,
      `${SLACK.slice(0, 15)}\n${SLACK.slice(15)}`,
    ];
    for (const [i, text] of corpus.entries()) {
      it(`sample ${i}`, async () => {
        let expected: string | null = null;
        for (const part of [text, ...secretVariants(text)]) {
          expected = await firstSecretRule(part);
          if (expected) break;
        }
        expect(await scanForSecrets(text)).toBe(expected);
      });
    }
  });

  it("lets no pattern cross the separator (a newline alone would let these match)", async () => {
    const value = "wJalrXUtnFEMIK7MDENGbPxRfiCYzq9f8d7e6c5b";
    const pemHead = "-----BEGIN RSA PRIVATE KEY-----";
    const pemRest = PEM.slice(pemHead.length + 1);
    expect(await firstSecretRule(["aws_secret_access_key =", value].join("\n"))).not.toBeNull();
    expect(await firstSecretRule(["aws_secret_access_key =", value].join(SEPARATOR))).toBeNull();
    expect(await firstSecretRule([pemHead, pemRest].join("\n"))).not.toBeNull();
    expect(await firstSecretRule([pemHead, pemRest].join(SEPARATOR))).toBeNull();
  });

  it("refuses the other rules' secrets dressed too", async () => {
    for (const secret of [AWS_SECRET, SLACK, NPM, PEM, POSTGRES, BASIC]) {
      expect(await firstSecretRule(secret)).not.toBeNull();
      expect(await scanForSecrets(`see ${b64(secret)}`)).toBe(await firstSecretRule(secret));
      expect(await scanForSecrets(reversed(secret))).toBe(await firstSecretRule(secret));
    }
  });

  describe("stays within its bounds", () => {
    const hostile: Record<string, string> = {
      "an NFKC expansion bomb": capped("\ufdfa".repeat(6000)),
      "thousands of one-word lines": capped(Array.from({ length: 5000 }, (_, i) => (i * 7919).toString(36)).join("\n")),
      "random base64 runs": capped(Array.from({ length: 800 }, () => randomBytes(18).toString("base64")).join(" ")),
      "nested base64 of hex": capped(b64(b64(randomBytes(6000).toString("hex")))),
      "one long hex word": capped(randomBytes(8192).toString("hex")),
      "wrapped base64": capped(randomBytes(12000).toString("base64").replace(/(.{76})/g, "$1\n")),
      "unclosed comments": capped("<!--".repeat(4000)),
      "percent words": capped(Array.from({ length: 3000 }, (_, i) => `a%2${i % 10}b`).join(" ")),
    };
    for (const [what, text] of Object.entries(hostile)) {
      it(what, async () => {
        const started = performance.now();
        const variants = secretVariants(text);
        expect(chars(variants)).toBeLessThanOrEqual(VARIANT_LIMITS.totalChars);
        expect(await scanForSecrets(text)).toBeNull();
        // Generous for a loaded CI machine; the bench (bench/secret-scan-cost.ts) has the real figures (a few ms).
        expect(performance.now() - started).toBeLessThan(1_000);
      });
    }

    it("keeps every variant of an ordinary reply at the size cap", () => {
      const paragraph =
        "Triage — the failing test is flaky on loaded runners; **a fix** is in review (see `retry.ts`).\n" +
        "Résumé: ﬁxed in 3f2a9c1, task 550e8400-e29b-41d4-a716-446655440000, <b>done</b> &amp; merged.\n\n";
      const text = capped(paragraph.repeat(200));
      expect(chars(secretVariants(text))).toBeLessThan(VARIANT_LIMITS.totalChars / 2);
    });

    it("still finds a token at the end of a reply at the size cap", async () => {
      const filler = "Triage done: the failing test is flaky on loaded runners; a fix is in review. See #42.\n".repeat(300);
      const tail = `\nbase64, as asked: ${b64(TOKEN)}`;
      expect(await scanForSecrets(capped(filler).slice(0, K16 - tail.length - 64) + tail)).toBe("@secretlint/secretlint-rule-github (GITHUB_TOKEN)");
    });
  });
});
