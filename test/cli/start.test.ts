/**
 * The long-running commands, run in-process and stopped through `io.signal` (what a first SIGINT does).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kill, spawnCli, type ManagedProcess } from "../support/processes.js";
import { createCliEnvironment, type CliEnvironment, type CliRun } from "./helpers.js";

const THREE_STEP = fileURLToPath(new URL("../../examples/workflows/three-step.yaml", import.meta.url));
const ECHO_HANDLER = fileURLToPath(new URL("../../examples/handlers/echo.ts", import.meta.url));

let cli: CliEnvironment;
beforeAll(async () => {
  cli = await createCliEnvironment();
  expect((await cli.run(["workflow", "submit", THREE_STEP, "--tenant", "acme"])).last).toBe("three-step@1");
});
afterAll(async () => {
  await cli?.cleanup();
});

/** A port nothing listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Polls `url` until it answers; fails with the command's output if the command ends first. */
async function untilAnswers(url: string, command: Promise<CliRun>): Promise<void> {
  let ended: CliRun | undefined;
  void command.then((run) => (ended = run));
  for (;;) {
    if (ended) throw new Error(`the command ended (code ${ended.code}) before ${url} answered: ${ended.stderr}${ended.stdout}`);
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function logLines(run: CliRun): Array<Record<string, unknown>> {
  return run.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("start", () => {
  it("start coordinator + start harness serve a task that task start --wait follows to completion", async () => {
    const stop = new AbortController();
    const coordinator = cli.run(["start", "coordinator", "--consumer", "test-coordinator", "--log-level", "info"], { signal: stop.signal });
    const harness = cli.run(["start", "harness", "--role", "echo", "--handler", ECHO_HANDLER, "--concurrency", "2"], { signal: stop.signal });
    try {
      const waited = await cli.run(["task", "start", "three-step", "--tenant", "acme", "--input", '{"n":1}', "--wait", "--timeout", "20"]);
      expect(waited.stderr).toBe("");
      expect(waited.code).toBe(0);
      expect(waited.stdout).toMatch(/step one \(role:echo\): dispatched, attempt 1/);
      expect(waited.stdout).toMatch(/step three \(role:echo\): completed, attempt 1/);
      expect(waited.stdout).toMatch(/task \S+ completed, cost 0\.3/);
      expect(waited.last).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      stop.abort();
    }
    const [coordinatorRun, harnessRun] = await Promise.all([coordinator, harness]);
    expect(coordinatorRun.code).toBe(0);
    expect(harnessRun.code).toBe(0);
    const logs = logLines(coordinatorRun);
    expect(logs.map((l) => l.msg)).toEqual(expect.arrayContaining(["coordinator started", "coordinator stopped"]));
    expect(logs.every((l) => typeof l.level === "number" && typeof l.time === "number")).toBe(true);
  });

  it("a standalone coordinator refuses to start without SWITCHYARD_BUS_SECRET, a harness without its queue's key", async () => {
    const coordinator = await cli.run(["start", "coordinator"], { env: { SWITCHYARD_BUS_SECRET: "" } });
    expect(coordinator.code).toBe(2);
    expect(coordinator.stderr).toMatch(/CONFIG: SWITCHYARD_BUS_SECRET is not set/);
    const harness = await cli.run(["start", "harness", "--role", "echo", "--handler", ECHO_HANDLER], { env: { SWITCHYARD_BUS_SECRET: "" } });
    expect(harness.code).toBe(2);
    expect(harness.stderr).toMatch(/CONFIG: no bus key to publish as role:echo/);
  });

  it("start coordinator serves its own counters on SWITCHYARD_METRICS_PORT", async () => {
    const port = await freePort();
    const stop = new AbortController();
    const coordinator = cli.run(["start", "coordinator", "--log-level", "info"], { signal: stop.signal, env: { SWITCHYARD_METRICS_PORT: String(port) } });
    const harness = cli.run(["start", "harness", "--role", "echo", "--handler", ECHO_HANDLER], { signal: stop.signal });
    let text = "";
    try {
      expect((await cli.run(["task", "start", "three-step", "--tenant", "acme", "--wait", "--timeout", "20"])).code).toBe(0);
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(response.status).toBe(200);
      text = await response.text();
    } finally {
      stop.abort();
    }
    // The hops this coordinator governed: three dispatches (plus the task start's first one, governed by the CLI).
    const dispatched = /^switchyard_hops_total\{action="dispatch",verdict="allow"\} (\d+)$/m.exec(text);
    expect(Number(dispatched?.[1])).toBeGreaterThanOrEqual(2);
    expect((await coordinator).code).toBe(0);
    await harness;
    await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
  });

  it("start all runs the coordinator and example workers in one process; --wait --json prints the TaskView last", async () => {
    const stop = new AbortController();
    const all = cli.run(["start", "all", "--roles", "echo,writer"], { signal: stop.signal });
    let view: { status: string; steps: Array<{ status: string; attempts: number }> };
    try {
      const waited = await cli.run(["task", "start", "three-step", "--tenant", "acme", "--wait", "--timeout", "20", "--json"]);
      expect(waited.code).toBe(0);
      view = JSON.parse(waited.last);
      expect(waited.lines).toHaveLength(1);
      expect(waited.stderr).toMatch(/step two \(role:echo\): completed/);
    } finally {
      stop.abort();
    }
    expect(view.status).toBe("completed");
    expect(view.steps.map((s) => [s.status, s.attempts])).toEqual([
      ["completed", 1],
      ["completed", 1],
      ["completed", 1],
    ]);
    expect((await all).code).toBe(0);
  });

  it("start all serves its gateway where SWITCHYARD_GATEWAY_HOST/PORT say, loopback by default", async () => {
    // 127.0.0.2 is loopback on Linux but a different address: a gateway bound to 0.0.0.0 would also answer on
    // 127.0.0.1, one bound where the variable says does not.
    const port = await freePort();
    const stop = new AbortController();
    const all = cli.run(["start", "all", "--roles", "echo", "--log-level", "info"], {
      signal: stop.signal,
      env: { SWITCHYARD_GATEWAY_HOST: "127.0.0.2", SWITCHYARD_GATEWAY_PORT: String(port) },
    });
    try {
      await untilAnswers(`http://127.0.0.2:${port}/healthz`, all);
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    } finally {
      stop.abort();
    }
    expect((await all).code).toBe(0);

    // Without the host variable: 127.0.0.1 as the README says (the default port 8080 may be taken on this box).
    const defaultPort = await freePort();
    const stopDefault = new AbortController();
    const byDefault = cli.run(["start", "all", "--roles", "echo", "--log-level", "info"], { signal: stopDefault.signal, env: { SWITCHYARD_GATEWAY_PORT: String(defaultPort) } });
    try {
      await untilAnswers(`http://127.0.0.1:${defaultPort}/healthz`, byDefault);
    } finally {
      stopDefault.abort();
    }
    const run = await byDefault;
    expect(run.code).toBe(0);
    expect(logLines(run).find((l) => l.msg === "gateway listening")).toMatchObject({ host: "127.0.0.1", port: defaultPort });
  });

  it("start all with its gateway port taken exits non-zero at once, says which address, and leaves nothing running", async () => {
    const squatter = createServer((_req, res) => res.end("not switchyard"));
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    const { port } = squatter.address() as AddressInfo;
    let proc: ManagedProcess | undefined;
    try {
      // A real process: it can only exit by itself if no coordinator or harness loop was left running.
      proc = spawnCli("start-all", ["start", "all", "--roles", "echo"], { ...cli.env, SWITCHYARD_GATEWAY_PORT: String(port) });
      const exited = await proc.exited;
      expect(exited.code, proc.output()).toBe(1);
      expect(proc.output()).toContain(`the gateway cannot listen on 127.0.0.1:${port}: the port is in use`);
      expect(proc.output()).toMatch(/--port or SWITCHYARD_GATEWAY_PORT/);
      // `start gateway` says the same.
      const gateway = await cli.run(["start", "gateway", "--port", String(port)]);
      expect(gateway.code).toBe(1);
      expect(gateway.stderr).toContain(`UNAVAILABLE: the gateway cannot listen on 127.0.0.1:${port}: the port is in use`);
      // The squatter still owns the port.
      expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe("not switchyard");
    } finally {
      if (proc) await kill(proc);
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
    }
  }, 60_000);

  it("start all refuses roles it has no example handler for", async () => {
    const result = await cli.run(["start", "all", "--roles", "echo,wizard"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/unknown: wizard/);
  });
});
