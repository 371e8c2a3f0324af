/**
 * The processes `switchyard start` runs obey the live flags: `flags set` in one command is picked up by a
 * running `start coordinator` / `start harness` without a restart.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCliEnvironment, ONE_STEP_WORKFLOW, type CliEnvironment } from "../cli/helpers.js";
import { waitFor } from "../support/runtime.js";
import { sleep } from "./support.js";

const ECHO_HANDLER = fileURLToPath(new URL("../../examples/handlers/echo.ts", import.meta.url));

let cli: CliEnvironment;
beforeAll(async () => {
  cli = await createCliEnvironment();
  const file = await cli.file("one.yaml", ONE_STEP_WORKFLOW);
  expect((await cli.run(["workflow", "submit", file, "--tenant", "acme"])).code).toBe(0);
});
afterAll(async () => {
  await cli?.cleanup();
});

async function stepStatus(taskId: string): Promise<string> {
  const view = JSON.parse((await cli.run(["task", "get", taskId, "--tenant", "acme", "--json"])).last) as { status: string; steps: Array<{ status: string }> };
  return view.status === "completed" ? "completed" : view.steps[0]!.status;
}

describe("start coordinator / start harness under live flags", () => {
  it("a harness switched off by `flags set` takes no work until switched on again", async () => {
    const off = await cli.run(["flags", "set", "HARNESS_ENABLED", "off", "--role", "echo", "--reason", "before go-live", "--actor", "sre"]);
    expect(off.code).toBe(0);
    const stop = new AbortController();
    const coordinator = cli.run(["start", "coordinator"], { signal: stop.signal });
    const harness = cli.run(["start", "harness", "--role", "echo", "--handler", ECHO_HANDLER, "--log-level", "info"], { signal: stop.signal });
    try {
      const started = await cli.run(["task", "start", "one-step", "--tenant", "acme"]);
      expect(started.code).toBe(0);
      const taskId = started.last;
      await sleep(1_500);
      expect(await stepStatus(taskId)).toBe("dispatched");

      expect((await cli.run(["flags", "set", "HARNESS_ENABLED", "on", "--role", "echo", "--reason", "go-live step 1", "--actor", "sre"])).code).toBe(0);
      await waitFor(async () => (await stepStatus(taskId)) === "completed", { timeoutMs: 4_000, intervalMs: 100, what: "the task to complete" });
    } finally {
      stop.abort();
    }
    const [coordinatorRun, harnessRun] = await Promise.all([coordinator, harness]);
    expect(coordinatorRun.code).toBe(0);
    expect(harnessRun.code).toBe(0);
    expect(harnessRun.stdout).toMatch(/taking no new work/);
  });
});
