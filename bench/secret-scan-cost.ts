/**
 * What the reply secret scan's variants (issue 26 §5, src/replies/secret-variants.ts) cost per reply: the literal
 * scan as it was (one lintSource over the text, recommended preset) against `scanForSecrets` now (variants built,
 * then one lintSource over the text and its variants joined). Both run in the same process, alternating round by
 * round; per text, the median of 7 rounds. Also the variant generation alone, and the hostile texts the bounds are
 * for. CPU only: `npx tsx bench/secret-scan-cost.ts` (not part of `npm run bench`).
 *
 * @secretlint/profiler's marks (each lint's ~60 performance marks, rescanned by an observer: upstream secretlint
 * #1633) are switched off by src/replies/secret-scan.ts for the whole process, so both paths here run without them,
 * as the product does. The explicit exit only skips the event loop's teardown.
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { lintSource } from "@secretlint/core";
import { creator as recommendedPreset } from "@secretlint/secretlint-rule-preset-recommend";
import { scanForSecrets } from "../src/replies/secret-scan.js";
import { secretVariants } from "../src/replies/secret-variants.js";

/** The scan before issue 26 §5, verbatim: the text alone, literally. */
const LITERAL_CONFIG = { rules: [{ id: "@secretlint/secretlint-rule-preset-recommend", rule: recommendedPreset }] };
async function literalScan(text: string): Promise<string | null> {
  if (text.length === 0) return null;
  const result = await lintSource({ source: { filePath: "/origin-reply.txt", content: text, contentType: "text" }, options: { config: LITERAL_CONFIG } });
  const hit = result.messages.find((m) => m.severity === "error") ?? result.messages[0];
  return hit ? `${hit.ruleId} (${hit.messageId})` : null;
}

const K16 = 16 * 1024;
const capped = (s: string): string => {
  let t = s;
  while (Buffer.byteLength(t) > K16) t = t.slice(0, t.length - 64);
  return t;
};
const TRIAGE = [
  "## Triage",
  "",
  "The failing test (`scheduler/retry.test.ts › retries with backoff`) is **flaky on loaded runners**: the retry waits",
  "50 ms, shorter than the lock's lease under load, so a second worker picks the job up first.",
  "",
  "- reproduced 3/10 with `npx vitest run --repeat 10` on 3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345",
  "- task 550e8400-e29b-41d4-a716-446655440000, run https://ci.example.com/runs/8812?filter=status%3Afailed&page=2",
  "",
  "```ts",
  "const lease = await locks.acquire(job.id, { ttlMs: 200 }); // was 50",
  "if (!lease) return retryLater(job, backoff(attempt));",
  "```",
  "",
  "Fix in review: #42. Closing once it lands — thanks for the report!",
].join("\n");

const TEXTS: Record<string, string> = {
  "one line (reply-egress's TEXT, 77 B)": "Triage done: the failing test is flaky on loaded runners; a fix is in review.",
  [`triage comment (${Buffer.byteLength(TRIAGE)} B, markdown + code)`]: TRIAGE,
  "16 KiB of triage comments (the cap)": capped(`${TRIAGE}\n\n`.repeat(30)),
  "hostile: NFKC expansion bomb (16 KiB)": capped("\ufdfa".repeat(6000)),
  "hostile: 16 KiB wrapped base64": capped(randomBytes(12000).toString("base64").replace(/(.{76})/g, "$1\n")),
  "hostile: 16 KiB of one-word lines": capped(Array.from({ length: 5000 }, (_, i) => (i * 7919).toString(36)).join("\n")),
};

/** Microseconds per call: median over rounds, `calls` calls per round. */
async function timeUs(calls: number, fn: () => unknown): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < calls; i++) await fn();
  return ((performance.now() - started) * 1000) / calls;
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const f = (n: number): string => (n >= 100 ? n.toFixed(0) : n.toFixed(1));

console.log("text | literal_us | variants_us (generation alone) | scan_us (now) | added_us | ratio");
for (const [name, text] of Object.entries(TEXTS)) {
  const calls = text.length > 4096 ? 40 : 400;
  // Warm-up: JIT and secretlint's lazy setup, both paths.
  for (let i = 0; i < 20; i++) {
    await literalScan(text);
    await scanForSecrets(text);
  }
  const literal: number[] = [];
  const scan: number[] = [];
  const gen: number[] = [];
  for (let round = 0; round < 7; round++) {
    literal.push(await timeUs(calls, () => literalScan(text)));
    scan.push(await timeUs(calls, () => scanForSecrets(text)));
    gen.push(await timeUs(calls, () => secretVariants(text)));
  }
  const [l, s, g] = [median(literal), median(scan), median(gen)];
  console.log(`${name} | ${f(l)} | ${f(g)} | ${f(s)} | ${f(s - l)} | ${(s / l).toFixed(2)}×`);
}
process.exit(0);
