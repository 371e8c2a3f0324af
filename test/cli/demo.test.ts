/**
 * The demo as a newcomer runs it: a separate process (through bin/switchyard.js, as `npx switchyard demo`
 * would), which must finish with exit 0 and end by itself — no handle left open: not the coordinator's, the
 * workers', the gateway's, nor those of the A2A agent it starts for its foreign hop.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { redisUrl } from "../support/env.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";
import { hopRows, runDemoProcess as runProcess, spawnDemo } from "./demo-process.js";

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

function demoEnv(): Record<string, string> {
  return { DATABASE_URL: db.url, REDIS_URL: redisUrl(), SWITCHYARD_KEY_PREFIX: redis.prefix };
}

describe("switchyard demo", () => {
  it("runs the research-report workflow end to end, foreign hop included, and exits 0 by itself", async () => {
    const result = await runProcess(["demo", "--timeout", "60"], demoEnv(), 80_000);
    const context = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
    expect(result.signal, context).toBeNull();
    expect(result.code, context).toBe(0);
    const out = result.stdout;
    expect(out).toContain("research-report@1: research → fact-check → draft → publish");
    // The run's switches, audited: A2A egress for the tenant among them.
    expect(out).toMatch(/switching on .*BUS_ROUTED \(role:researcher\), A2A_EGRESS_ENABLED \(global, tenant:demo\) — audited as actor "demo"/);
    // The local agent, registered for the tenant with egress to its own host and port only.
    const agentUrl = /(http:\/\/127\.0\.0\.1:\d+) — Agent Card at \1\/\.well-known\/agent-card\.json, skill "fact-check"/.exec(out)?.[1];
    expect(agentUrl, context).toBeDefined();
    expect(out).toContain(`registered foreign agent "fact-checker" for tenant "demo": skill fact-check, egress allowed to ${new URL(agentUrl!).host} only`);
    expect(out).toMatch(/step "fact-check" goes to foreign:fact-checker: governed as a2a_egress, audited before any byte leaves, resumed by the agent's signed push to http:\/\/127\.0\.0\.1:\d+\/api\/v1\/a2a\/callback\//);
    // The researcher delegated to the analyst: a delegation step shows up in the progress.
    expect(out).toMatch(/step research\.\S+ \(role:analyst, delegated\): completed/);
    expect(out).toMatch(/step fact-check \(foreign:fact-checker\): completed, attempt 1/);
    expect(out).toMatch(/step publish \(role:publisher\): parked(, attempt \d+)? — waiting for approval [0-9a-f-]{36}/);
    expect(out).toMatch(/The demo approves it as actor "demo"/);
    expect(out).toMatch(/approved by demo/);
    expect(out).toMatch(/step publish \(role:publisher\): completed/);
    expect(out).toContain("the fact-checker's verdict: supported (2 claims checked)");
    // The signed callback URL is a credential: nothing (not the agent's SDK either) prints it.
    expect(out + result.stderr).not.toMatch(/\?t=[A-Za-z0-9_-]{20,}/);

    // The hop table: rows in seq order with the columns the README shows.
    const rows = hopRows(out);
    const seqs = rows.map((r) => Number(r.split(/\s+/)[0]));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(rows.some((r) => /\bsub_query\b.*role:analyst/.test(r))).toBe(true);
    // The foreign hop: governed egress, then the agent's answer as its own edge, then the writer's dispatch.
    const steps = rows.map((r) => r.split(/\s+/).slice(1, 5).join(" "));
    const egress = steps.indexOf("fact-check a2a_egress coordinator foreign:fact-checker");
    expect(egress, out).toBeGreaterThan(0);
    expect(steps.slice(egress, egress + 3)).toEqual([
      "fact-check a2a_egress coordinator foreign:fact-checker",
      "fact-check result foreign:fact-checker coordinator",
      "draft dispatch coordinator role:writer",
    ]);
    expect(rows[egress]).toMatch(/\ballow\s+builtin:default\b/);
    expect(rows[egress + 1]).toMatch(/\baccepted\s+builtin:result\s+0\.5\b/);
    expect(rows.some((r) => /\bpublish\s+dispatch\s+coordinator\s+role:publisher\s+requires_approval\s+builtin:approval-hint\b/.test(r))).toBe(true);
    expect(rows.some((r) => /\bapproval\b.*\bapproved\b/.test(r))).toBe(true);
    expect(rows.every((r) => /\+\d+$/.test(r))).toBe(true);

    expect(out).toMatch(/total cost of the task: \d+(\.\d+)? \(budget 100\)/);
    expect(out).toMatch(/audit chain of tenant demo is intact: \d+ rows verified/);
    expect(out).toContain("Demo finished: the task completed and the audit chain verifies.");
    // The console: its URL on the demo's gateway and a sign-in key for the tenant; without --keep-running it ends.
    expect(out).toMatch(/9\. The console: http:\/\/127\.0\.0\.1:\d+\/console\//);
    expect(out).toMatch(/^\s+sy_[A-Za-z0-9_-]{43}$/m);
    expect(out).toContain("run `npm run demo -- --keep-running` to keep it up");
  }, 90_000);

  it("--keep-running keeps the gateway up for the console until Ctrl-C, then ends by itself", async () => {
    const child = spawnDemo(["demo", "--keep-running", "--tenant", "console"], demoEnv());
    try {
      const out = await child.waitFor(/press Ctrl-C to stop/, 80_000);
      const consoleUrl = /9\. The console: (http:\/\/127\.0\.0\.1:\d+)\/console\//.exec(out)![1]!;
      const key = /^\s+(sy_[A-Za-z0-9_-]{43})$/m.exec(out)![1]!;
      const signIn = await fetch(`${consoleUrl}/console/session`, { method: "POST", body: JSON.stringify({ apiKey: key }) });
      expect(signIn.status).toBe(200);
      expect(await signIn.json()).toMatchObject({ tenant: "console", admin: false });
      const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
      expect((await fetch(`${consoleUrl}/console/session`, { headers: { cookie } })).status).toBe(200);
      // Still up a moment later: it waits for Ctrl-C, not for a timer.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await fetch(`${consoleUrl}/healthz`)).status).toBe(200);
      child.process.kill("SIGINT");
      const result = await child.exited(30_000);
      expect(result.signal, child.output()).toBeNull();
      expect(result.code, child.output()).toBe(0);
      await expect(fetch(`${consoleUrl}/healthz`)).rejects.toThrow();
    } finally {
      child.process.kill("SIGKILL");
    }
  }, 120_000);

  it("runs again against the same database: flags already on, the agent's registration updated to its new port", async () => {
    const first = await runProcess(["demo", "--tenant", "again"], demoEnv(), 80_000);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const second = await runProcess(["demo", "--tenant", "again"], demoEnv(), 80_000);
    const context = `stdout:\n${second.stdout}\nstderr:\n${second.stderr}`;
    expect(second.signal, context).toBeNull();
    expect(second.code, context).toBe(0);
    expect(second.stdout).toMatch(/flags already on: .*A2A_EGRESS_ENABLED \(global, tenant:again\)/);
    const agentUrl = /(http:\/\/127\.0\.0\.1:\d+) — Agent Card/.exec(second.stdout)?.[1];
    expect(second.stdout).toContain(`updated the registration of foreign agent "fact-checker" for tenant "again": skill fact-check, egress allowed to ${new URL(agentUrl!).host} only`);
    // The same definition again: the same version, and a second task through the same hops.
    expect(second.stdout).toContain("research-report@1: research → fact-check → draft → publish");
    expect(hopRows(second.stdout).filter((r) => /\bfact-check\s+result\s+foreign:fact-checker\b/.test(r))).toHaveLength(1);
    expect(second.stdout).toMatch(/audit chain of tenant again is intact: \d+ rows verified/);
  }, 170_000);

  it("exits 1 and still ends by itself when the task cannot finish in time", async () => {
    // No Redis-side trouble needed: a timeout this short ends the watch while the task is still running.
    const result = await runProcess(["demo", "--timeout", "0.05", "--tenant", "impatient"], demoEnv(), 60_000);
    expect(result.signal).toBeNull();
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(/error: TIMEOUT: task \S+ is still (running|parked) after 0\.05 s/);
  }, 70_000);
});
