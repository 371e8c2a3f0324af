/**
 * Workers hold no database credentials (issue 27 §3): two harness processes whose DATABASE_URL answers nothing, each
 * with only its own queue's bus key, run a delegation end to end against a real coordinator — the researcher asks
 * the analyst, is resumed with the REPLY and reads the analyst's output from it — obeying the live flags from the
 * coordinators' copy in Redis.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Config } from "../../src/config/index.js";
import { runHarnessProcess } from "../../src/harness/process.js";
import { silentLogger } from "../../src/logger.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { testBusAuth } from "../support/bus-auth.js";
import { freePort } from "../support/ports.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";

const ORG = "acme";

describe("a harness process with no database reachable", () => {
  let rt: TestRuntime;
  const stop = new AbortController();
  const running: Promise<void>[] = [];
  beforeEach(async () => {
    rt = await createTestRuntime();
    rt.startCoordinator();
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(`
name: research
steps:
  - { id: research, to: "role:researcher", cost_estimate: 1 }
`));
  });
  afterEach(async () => {
    stop.abort();
    await Promise.allSettled(running);
    await rt.cleanup();
  });

  it("serves its queue, delegates and reads the delegate's output, with only Redis and its bus key", async () => {
    const deadPort = await freePort();
    const workerConfig = (queue: string): Config => ({
      ...rt.config,
      // Nothing listens here: any attempt to use the database would fail the turn or stall the start.
      databaseUrl: `postgres://postgres:nobody@127.0.0.1:${deadPort}/switchyard`,
      busAuth: { secrets: [], publisherKeys: [testBusAuth().publisherKey(queue)] },
    });
    for (const [role, handlerPath] of [["researcher", "examples/handlers/researcher.ts"], ["analyst", "examples/handlers/analyst.ts"]] as const) {
      running.push(runHarnessProcess({ config: workerConfig(`role:${role}`), role, handlerPath, logger: silentLogger, signal: stop.signal, liveFlags: true }));
    }

    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "research", input: { topic: "tides" } });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status, JSON.stringify(task.error)).toBe("completed");
    const delegate = task.steps.find((s) => s.kind === "delegation")!;
    expect(delegate.destination).toBe("role:analyst");
    const output = task.steps.find((s) => s.id === "research")!.output as { topic: string; analysis: unknown };
    // Read from the REPLY: the delegate's stored output, with no store asked.
    expect(output.topic).toBe("tides");
    expect(output.analysis).toEqual(delegate.output);
    expect(delegate.output).not.toBeNull();
  });
});
