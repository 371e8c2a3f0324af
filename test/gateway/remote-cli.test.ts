/**
 * The CLI's remote mode: with --url / SWITCHYARD_URL the tenant commands go through the gateway and print exactly
 * what direct mode prints for the same data; errors keep their code, message and exit status.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { runCli } from "../../src/cli/main.js";
import { createSwitchyardClient } from "../../src/sdk/client.js";
import { FLAGS_ON_ENV, redisUrl } from "../support/env.js";
import { waitFor } from "../support/runtime.js";
import { waitForProgress } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  last: string;
}

const FLOW = `
name: gated
description: draft, then publish after an approval
budget: 20
steps:
  - { id: draft, to: "role:echo", cost_estimate: 1.5 }
  - { id: publish, to: "role:echo", approval: true }
`;

describe("CLI remote mode", () => {
  let fx: GatewayFixture;
  let workers: Workers;
  let key: string;
  let dir: string;
  let env: Record<string, string>;

  /** `live` sees stderr while the command runs. */
  async function cli(argv: string[], mode: "direct" | "remote", extraEnv: Record<string, string> = {}, live: { stderr: string } = { stderr: "" }): Promise<Run> {
    let stdout = "";
    const modeEnv = mode === "remote" ? { SWITCHYARD_URL: fx.url, SWITCHYARD_TOKEN: key } : {};
    const code = await runCli(argv, {
      env: { ...env, ...modeEnv, ...extraEnv },
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: (t: string) => (live.stderr += t) },
      cwd: dir,
      handleSignals: false,
    });
    const lines = stdout.split("\n").filter(Boolean);
    return { code, stdout, stderr: live.stderr, last: lines.at(-1) ?? "" };
  }

  /** Runs a read in both modes and expects the same exit code and output. */
  async function same(argv: string[]): Promise<Run> {
    const direct = await cli([...argv, "--tenant", "acme"], "direct");
    const remote = await cli(argv, "remote");
    expect({ code: remote.code, stdout: remote.stdout, stderr: remote.stderr }, argv.join(" ")).toEqual({ code: direct.code, stdout: direct.stdout, stderr: direct.stderr });
    return remote;
  }

  /** Waits, through the remote CLI, while the task keeps moving, until it has `status`. */
  async function untilStatus(taskId: string, status: string): Promise<void> {
    await waitForProgress({
      what: `task ${taskId} to be ${status}`,
      progress: async () => JSON.parse((await cli(["task", "get", taskId, "--json"], "remote")).stdout) as { status: string; steps: Array<{ status: string; attempts: number }> },
      done: (task) => task.status === status,
      key: (task) => JSON.stringify([task.status, task.steps.map((s) => [s.status, s.attempts])]),
    });
  }

  beforeAll(async () => {
    fx = await createGatewayFixture();
    key = await fx.tenant("acme");
    dir = await mkdtemp(join(tmpdir(), "sy-remote-"));
    await writeFile(join(dir, "gated.yaml"), FLOW);
    await writeFile(join(dir, "bad.yaml"), "name: bad\nsteps:\n  - { id: a, to: 'nowhere', retries: 99 }\n");
    env = { ...FLAGS_ON_ENV, DATABASE_URL: fx.rt.db.url, REDIS_URL: redisUrl(), SWITCHYARD_KEY_PREFIX: fx.rt.prefix, SWITCHYARD_LOG_LEVEL: "warn" };
    fx.rt.startCoordinator();
    workers = new Workers(fx.rt);
    workers.start("echo", async (work) => ({ step: work.stepId, nested: { b: 2, a: [1, "x", null] } }));
  });
  afterAll(async () => {
    await workers.stop();
    await fx.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it("workflow submit / get / list", async () => {
    const submitted = await cli(["workflow", "submit", "gated.yaml"], "remote");
    expect(submitted).toMatchObject({ code: 0, last: "gated@1" });
    expect(submitted.stdout).toBe("stored gated version 1\ngated@1\n");
    const again = await cli(["workflow", "submit", "gated.yaml", "--tenant", "acme"], "direct");
    expect(again.stdout).toBe("unchanged: identical to version 1\ngated@1\n");
    expect((await cli(["workflow", "submit", "gated.yaml", "--json"], "remote")).stdout).toBe((await cli(["workflow", "submit", "gated.yaml", "--json", "--tenant", "acme"], "direct")).stdout);
    await same(["workflow", "get", "gated"]);
    await same(["workflow", "get", "gated@1", "--json"]);
    await same(["workflow", "list"]);
    await same(["workflow", "list", "--json"]);
  });

  it("task watch follows the API's Watch stream, explains the parked step, and ends 0 once it completes", async () => {
    const taskId = (await cli(["task", "start", "gated"], "remote")).last;
    await untilStatus(taskId, "parked");
    const approvalId = (JSON.parse((await cli(["approval", "list", "--json"], "remote")).stdout) as { approvals: Array<{ id: string; taskId: string }> }).approvals.find((a) => a.taskId === taskId)!.id;
    const watching = cli(["task", "watch", taskId, "--timeout", "60", "--explain-after", "1"], "remote");
    // Decided while the watch runs: the stream must deliver the change and the completion.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect((await cli(["approval", "approve", approvalId], "remote")).code).toBe(0);
    const watched = await watching;
    expect(watched.code).toBe(0);
    // The gateway's explanation (TaskService.Explain), as direct mode words it: the rule and how to decide.
    expect(watched.stdout).toContain(`  step publish: parked on approval ${approvalId} (rule builtin:approval-hint: the workflow step asks for a human approval) since `);
    expect(watched.stdout).toMatch(/step publish \(role:echo\): completed/);
    expect(watched.stdout).toMatch(new RegExp(`task ${taskId} completed`));
  });

  it("task watch over the API explains a step no harness reads as direct mode does (TaskService.Explain); another tenant cannot ask", async () => {
    await writeFile(join(dir, "stuck.yaml"), 'name: stuck\nsteps:\n  - { id: only, to: "role:nobody", timeout: 10m }\n');
    expect((await cli(["workflow", "submit", "stuck.yaml"], "remote")).code).toBe(0);
    const taskId = (await cli(["task", "start", "stuck"], "remote")).last;
    await waitForProgress({
      what: `step only of task ${taskId} to be dispatched`,
      progress: async () => JSON.parse((await cli(["task", "get", taskId, "--json"], "remote")).stdout) as { steps: Array<{ status: string }> },
      done: (task) => task.steps[0]?.status === "dispatched",
      key: (task) => JSON.stringify(task.steps),
    });
    const watch = ["task", "watch", taskId, "--timeout", "2.5", "--explain-after", "1"];
    const reason = /no change for \d+ s:\n {2}step only: no harness has ever read role:nobody\n/;
    const remote = await cli(watch, "remote");
    expect(remote.code).toBe(1);
    expect(remote.stdout).toMatch(reason);
    expect((await cli([...watch, "--tenant", "acme"], "direct")).stdout).toMatch(reason);

    expect((await cli(["flags", "set", "HARNESS_ENABLED", "off", "--role", "nobody", "--reason", "test"], "direct")).code).toBe(0);
    const client = createSwitchyardClient({ url: fx.url, token: key });
    expect((await client.tasks.explain({ id: taskId })).lines).toEqual(["step only: no harness has ever read role:nobody; HARNESS_ENABLED is off for role:nobody (flags table)"]);
    const stranger = createSwitchyardClient({ url: fx.url, token: await fx.tenant("stranger") });
    await expect(stranger.tasks.explain({ id: taskId })).rejects.toMatchObject({ code: Code.NotFound });
    await cli(["task", "cancel", taskId], "remote");
    expect((await client.tasks.explain({ id: taskId })).lines).toEqual([]);
  });

  it("an invalid workflow file fails the same way: exit 2, the file and the field path", async () => {
    const direct = await cli(["workflow", "submit", "bad.yaml", "--tenant", "acme"], "direct");
    const remote = await cli(["workflow", "submit", "bad.yaml"], "remote");
    expect(direct.code).toBe(2);
    expect(remote).toMatchObject({ code: 2, stderr: direct.stderr });
    expect(remote.stderr).toContain(join(dir, "bad.yaml"));
    expect(remote.stderr).toContain("steps[0].to");
    const directJson = await cli(["workflow", "submit", "bad.yaml", "--tenant", "acme", "--json"], "direct");
    const remoteJson = await cli(["workflow", "submit", "bad.yaml", "--json"], "remote");
    expect(remoteJson.stdout).toBe(directJson.stdout);
  });

  it("task start (idempotent), get, list, cancel; approval list and decisions; audit verify and list", async () => {
    const started = await cli(["task", "start", "gated", "--input", '{"z":1,"a":{"k":[true]}}', "--idempotency-key", "one"], "remote");
    expect(started.code).toBe(0);
    const taskId = started.last;
    expect(started.stdout).toBe(`started: task ${taskId} of gated@1\n${taskId}\n`);
    const repeated = await cli(["task", "start", "gated", "--idempotency-key", "one"], "remote");
    expect(repeated.stdout).toBe(`already started (same idempotency key): task ${taskId} of gated@1\n${taskId}\n`);

    const approvalId = await waitFor(async () => {
      const listed = JSON.parse((await cli(["approval", "list", "--json"], "remote")).stdout) as { approvals: Array<{ id: string }> };
      return listed.approvals[0]?.id;
    });
    await same(["task", "get", taskId]);
    await same(["task", "get", taskId, "--json"]);
    await same(["approval", "list"]);
    await same(["approval", "list", "--json", "--status", "all"]);

    const decided = await cli(["approval", "approve", approvalId, "--actor", "ann", "--reason", "ok", "--json"], "remote");
    expect(JSON.parse(decided.stdout)).toEqual({ approvalId, status: "approved", decidedBy: "ann (apikey:default)", alreadyDecided: false });
    await same(["approval", "deny", approvalId]);
    await same(["approval", "approve", approvalId, "--json"]);

    await untilStatus(taskId, "completed");
    await same(["task", "get", taskId, "--json"]);
    await same(["task", "get", taskId]);
    await same(["approval", "list", "--status", "approved", "--json"]);

    const other = (await cli(["task", "start", "gated"], "remote")).last;
    // Compare once it stands still (parked on its approval), or the two reads may see different moments.
    await untilStatus(other, "parked");
    await same(["task", "list"]);
    await same(["task", "list", "--json", "--status", "running,parked", "--limit", "1"]);
    const cancelled = await cli(["task", "cancel", other, "--reason", "enough", "--json"], "remote");
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ id: other, status: "cancelled" });
    await same(["task", "cancel", other]);
    await same(["task", "cancel", other, "--json"]);

    await same(["audit", "verify"]);
    await same(["audit", "verify", "--json"]);
    await same(["audit", "list"]);
    await same(["audit", "list", "--json", "--task", taskId, "--after", "1", "--limit", "3"]);
  });

  it("task start --wait follows the task through the gateway", async () => {
    await cli(["workflow", "submit", "gated.yaml"], "remote");
    const live = { stderr: "" };
    const waiting = cli(["task", "start", "gated", "--wait", "--timeout", "20", "--json"], "remote", {}, live);
    // Decide only once the watcher has shown the parked step.
    const approvalId = await waitFor(async () => /waiting for approval ([0-9a-f-]{36})/.exec(live.stderr)?.[1], { what: "the parked step on stderr" });
    await cli(["approval", "approve", approvalId], "remote");
    const done = await waiting;
    expect(done.code).toBe(0);
    expect(JSON.parse(done.last)).toMatchObject({ status: "completed", orgId: "acme" });
    expect(done.stderr).toContain("step publish (role:echo): parked");
    expect(done.stderr).toContain(`decide with: switchyard approval approve ${approvalId}   (or: approval deny …)`);
  });

  it("errors keep their code and exit status; a bad key or an unreachable gateway says what to fix", async () => {
    await same(["task", "get", "00000000-0000-4000-8000-000000000000"]);
    await same(["task", "get", "00000000-0000-4000-8000-000000000000", "--json"]);
    await same(["workflow", "get", "nope@3"]);
    await same(["approval", "approve", "00000000-0000-4000-8000-000000000000"]);

    const badKey = await cli(["workflow", "list"], "remote", { SWITCHYARD_TOKEN: `sy_${"x".repeat(43)}` });
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toMatch(/refused the API key: unknown API key \(check --token/);
    const otherTenant = await cli(["workflow", "list", "--tenant", "globex"], "remote");
    expect(otherTenant.code).toBe(1);
    expect(otherTenant.stderr).toContain("a key acts only for its own tenant");
    const noToken = await cli(["workflow", "list", "--url", fx.url], "direct");
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain("SWITCHYARD_TOKEN");
    const down = await cli(["workflow", "list", "--url", "http://127.0.0.1:9", "--token", key], "direct");
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^error: UNAVAILABLE: cannot reach the gateway at http:\/\/127\.0\.0\.1:9/);
  });

  it("operator commands stay direct while --url is set", async () => {
    const created = await cli(["tenant", "create", "globex", "--name", "Globex"], "remote");
    expect(created.code).toBe(0);
    expect(created.last).toMatch(/^sy_[A-Za-z0-9_-]{43}$/);
    // The printed key works against the gateway at once.
    const asGlobex = await cli(["workflow", "list", "--json"], "remote", { SWITCHYARD_TOKEN: created.last });
    expect(JSON.parse(asGlobex.stdout)).toEqual({ workflows: [] });
  });
});
