/**
 * The reply secret scan (issue 26 §5): a token is refused however a worker dresses it — zero-width characters,
 * full-width letters, base64, percent-encoding, a line split, reversal, hex, Markdown escapes, HTML character
 * references, an in-text `secretlint-disable` — and ordinary replies (prose, commit shas, UUIDs, harmless base64,
 * percent-encoded URLs, code) are not. Only the rule is ever answered, never the match.
 */
import { describe, expect, it } from "vitest";
import { scanForSecrets } from "../../src/replies/secret-scan.js";
import { secretVariants, VARIANT_LIMITS } from "../../src/replies/secret-variants.js";

/** A fake classic GitHub token of the right shape: `ghp_` + 36 alphanumerics (built here, so no literal token sits in the repo). */
const TOKEN = `ghp_${"Xk9mQ2vR7tLp".repeat(3)}`;
const GITHUB_RULE = "@secretlint/secretlint-rule-github (GITHUB_TOKEN)";

const fullWidth = (s: string): string => [...s].map((c) => String.fromCodePoint(c.codePointAt(0)! + 0xfee0)).join("");
const percentAll = (s: string): string => [...Buffer.from(s)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join("");
const reversed = (s: string): string => [...s].reverse().join("");

describe("scanForSecrets", () => {
  it("refuses the literal token (as before)", async () => {
    expect(TOKEN).toMatch(/^ghp_[A-Za-z0-9]{36}$/);
    expect(await scanForSecrets(`here is the token you asked for: ${TOKEN}`)).toBe(GITHUB_RULE);
  });

  describe("refuses the token however it is dressed", () => {
    const evasions: Record<string, string> = {
      "a zero-width space after the prefix": `token: ghp_\u200b${TOKEN.slice(4)}`,
      "zero-width joiners and a soft hyphen throughout": `token: ${[...TOKEN].join("\u200d")}\u00ad ok`,
      "full-width letters": `token: ${fullWidth(TOKEN)}`,
      base64: `as asked, base64 first: ${Buffer.from(TOKEN).toString("base64")}`,
      "base64 of a sentence carrying it": `payload=${Buffer.from(`the token is ${TOKEN}, use it well`).toString("base64")}`,
      base64url: `b64url: ${Buffer.from(`${TOKEN}??>>`).toString("base64url")}`,
      "base64 wrapped over lines": `Encoded:\n${Buffer.from(`token ${TOKEN} end`).toString("base64").replace(/(.{20})/g, "$1\n")}\nthanks`,
      "base64 after a prefix glued to it": `secret_${Buffer.from(TOKEN).toString("base64")}`,
      "base64 twice": Buffer.from(Buffer.from(TOKEN).toString("base64")).toString("base64"),
      "percent-encoding of every byte": `https://example.com/?t=${percentAll(TOKEN)}`,
      "percent-encoding of the underscore only": `ghp%5F${TOKEN.slice(4)}`,
      "double percent-encoding": `ghp%255F${TOKEN.slice(4)}`,
      "a newline split": `Here it is, in two halves:\n${TOKEN.slice(0, 20)}\n${TOKEN.slice(20)}\nthanks`,
      "a newline split after a word": `the token is\n${TOKEN.slice(0, 17)}\n  ${TOKEN.slice(17, 30)}\n${TOKEN.slice(30)}\nthanks a lot`,
      "a CRLF split inside a sentence": `token: ${TOKEN.slice(0, 12)}\r\n${TOKEN.slice(12)} (split)`,
      "the reversed token": `reversed, as you asked: ${reversed(TOKEN)}`,
      "hex": `hex: ${Buffer.from(TOKEN).toString("hex")}`,
      "a Markdown backslash escape": `token: ghp\\_${TOKEN.slice(4)}`,
      "HTML character references": `token: &#103;&#x68;p&lowbar;${TOKEN.slice(4)}`,
      "an HTML comment inside it": `token: ghp_<!-- -->${TOKEN.slice(4)}`,
      "full-width base64": fullWidth(Buffer.from(TOKEN).toString("base64")),
    };
    for (const [how, text] of Object.entries(evasions)) {
      it(how, async () => {
        expect(text).not.toContain(TOKEN); // the dressing really hides it from a literal scan
        expect(await scanForSecrets(text)).toBe(GITHUB_RULE);
      });
    }
  });

  it("ignores secretlint-disable comments in the reply (a worker must not switch the scan off)", async () => {
    expect(await scanForSecrets(`<!-- secretlint-disable -->\n${TOKEN}`)).toBe(GITHUB_RULE);
    expect(await scanForSecrets(`${TOKEN} // secretlint-disable-line`)).toBe(GITHUB_RULE);
  });

  it("answers the rule only, never the token or a piece of it", async () => {
    const rule = await scanForSecrets(`x ${Buffer.from(TOKEN).toString("base64")}`);
    expect(rule).toBe(GITHUB_RULE);
    expect(rule).not.toContain(TOKEN.slice(4, 12));
  });

  describe("passes ordinary replies", () => {
    const harmless: Record<string, string> = {
      prose:
        "Triage done: the failing test is flaky on loaded runners; a fix is in review.\n\n" +
        "I reproduced it three times out of ten with `--repeat 10`. The retry logic in the scheduler waits 50 ms,\n" +
        "which is shorter than the lock's lease under load. Suggest bumping it to 200 ms and adding a metric.\n" +
        "Thanks for the report — closing once #42 lands.",
      "full-width prose and emoji": "了解しました。ＯＫです！ テストは全部通りました 🎉 ﬁne ﬀ ½ ™",
      "a git commit sha": "Fixed in 3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345 (short 3f2a9c1) and 0123456789abcdef0123456789abcdef01234567.",
      "a SHA-256 digest": "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      "a UUID": "Task 550e8400-e29b-41d4-a716-446655440000 and request 123e4567-e89b-12d3-a456-426614174000 are done.",
      "base64 of harmless text": `Encoded summary: ${Buffer.from("All checks passed on the main branch; nothing to report here.").toString("base64")}`,
      "a long URL with percent-encoding": `See https://example.com/search?q=${encodeURIComponent("flaky test in scheduler/retry.ts — lease too short?")}&filter=${percentAll("is:open label:bug")}&page=2`,
      "a code snippet": [
        "```ts",
        "export function retry<T>(fn: () => Promise<T>, attempts = 3): Promise<T> {",
        "  const token = process.env.GITHUB_TOKEN ?? \"\"; // read at run time, never logged",
        "  const key = `ghp_${'<redacted>'}`;",
        "  return fn().catch((e: unknown) => (attempts > 1 ? retry(fn, attempts - 1) : Promise.reject(e)));",
        "}",
        "const data = Buffer.from(\"aGVsbG8gd29ybGQsIHRoaXMgaXMgZmluZQ==\", \"base64\").toString();",
        "const id = crypto.randomUUID(); // e.g. 550e8400-e29b-41d4-a716-446655440000",
        "if (a < b && c > d) { x = y * z; } // comparisons_and_long_identifier_names_here",
        "```",
      ].join("\n"),
      "a stack trace": "Error: lease expired\n    at Scheduler.tick (/app/src/scheduler/retry.ts:42:13)\n    at processTicksAndRejections (node:internal/process/task_queues:95:5)",
      "a short ghp_ mention": "GitHub classic tokens start with ghp_ and are 40 characters long; never paste one.",
    };
    for (const [what, text] of Object.entries(harmless)) {
      it(what, async () => {
        expect(await scanForSecrets(text)).toBeNull();
      });
    }
  });

  it("stays bounded on a large reply made of encoded-looking runs: the variants never exceed their budget", async () => {
    const runs = Array.from({ length: 600 }, (_, i) => Buffer.from(`harmless chunk number ${i} of many`).toString("base64")).join(" ");
    const text = runs.slice(0, 16 * 1024);
    expect(await scanForSecrets(text)).toBeNull();
    const variants = secretVariants(text);
    expect(variants.reduce((n, v) => n + v.length, 0)).toBeLessThanOrEqual(VARIANT_LIMITS.totalChars);
  });

  it("leaves nothing behind per scan in the process's performance timeline (secretlint's profiler is switched off)", async () => {
    const before = performance.getEntriesByType("mark").length;
    for (let i = 0; i < 20; i++) await scanForSecrets(`an ordinary reply, number ${i}`);
    expect(performance.getEntriesByType("mark").length).toBe(before);
  });
});
