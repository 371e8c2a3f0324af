/**
 * The demo as a newcomer runs it: a separate process (through bin/switchyard.js, as `npx switchyard demo`
 * would), which must finish with exit 0 and end by itself — no handle left open.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { redisUrl } from "../support/env.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

const BIN = fileURLToPath(new URL("../../bin/switchyard.js", import.meta.url));

let db: TestDatabase;
let redis: TestRedis;
beforeAll(async () => {
  db = await createTestDatabase();
  redis = await createTestRedis();
});
afterAll(async () => {
  await redis?.cleanup();
  await db?.drop();
});

function runProcess(args: string[], env: Record<string, string>, killAfterMs: number): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    // A process that does not end by itself is a failure, not a hang of the test run.
    const timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe("switchyard demo", () => {
  it("runs the research-report workflow end to end and exits 0 by itself", async () => {
    const result = await runProcess(["demo", "--timeout", "60"], { DATABASE_URL: db.url, REDIS_URL: redisUrl(), SWITCHYARD_KEY_PREFIX: redis.prefix }, 80_000);
    const context = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
    expect(result.signal, context).toBeNull();
    expect(result.code, context).toBe(0);
    const out = result.stdout;
    expect(out).toContain("research-report@1: research → draft → publish");
    // The researcher delegated to the analyst: a delegation step shows up in the progress.
    expect(out).toMatch(/step research\.\S+ \(role:analyst, delegated\): completed/);
    expect(out).toMatch(/step publish \(role:publisher\): parked(, attempt \d+)? — waiting for approval [0-9a-f-]{36}/);
    expect(out).toMatch(/The demo approves it as actor "demo"/);
    expect(out).toMatch(/approved by demo/);
    expect(out).toMatch(/step publish \(role:publisher\): completed/);

    // The hop table: header, then rows in seq order with the columns the README shows.
    const lines = out.split("\n");
    const header = lines.findIndex((l) => /^\s+SEQ\s+STEP\s+ACTION\s+ACTOR\s+DESTINATION\s+VERDICT\s+RULE\s+COST\s+\+MS$/.test(l));
    expect(header, context).toBeGreaterThan(0);
    const rows: string[] = [];
    for (let i = header + 1; i < lines.length && /^\s+\d+\s/.test(lines[i]!); i++) rows.push(lines[i]!.trim());
    const seqs = rows.map((r) => Number(r.split(/\s+/)[0]));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(rows.some((r) => /\bsub_query\b.*role:analyst/.test(r))).toBe(true);
    expect(rows.some((r) => /\bpublish\s+dispatch\s+coordinator\s+role:publisher\s+requires_approval\s+builtin:approval-hint\b/.test(r))).toBe(true);
    expect(rows.some((r) => /\bapproval\b.*\bapproved\b/.test(r))).toBe(true);
    expect(rows.every((r) => /\+\d+$/.test(r))).toBe(true);

    expect(out).toMatch(/total cost of the task: \d+(\.\d+)? \(budget 100\)/);
    expect(out).toMatch(/audit chain of tenant demo is intact: \d+ rows verified/);
    expect(out).toContain("Demo finished: the task completed and the audit chain verifies.");
  }, 90_000);

  it("exits 1 and still ends by itself when the task cannot finish in time", async () => {
    // No Redis-side trouble needed: a timeout this short ends the watch while the task is still running.
    const result = await runProcess(["demo", "--timeout", "0.05", "--tenant", "impatient"], { DATABASE_URL: db.url, REDIS_URL: redisUrl(), SWITCHYARD_KEY_PREFIX: redis.prefix }, 60_000);
    expect(result.signal).toBeNull();
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/error: TIMEOUT: task \S+ is still (running|parked) after 0\.05 s/);
  }, 70_000);
});
