/**
 * A process started while its dependencies are down — a supervisor restarting it in the middle of a database or
 * Redis outage — waits for them instead of exiting, and then does its job. A coordinator and a harness start
 * against a Redis port where nothing answers yet; once a redis-server of this test's own comes up there, a task
 * runs through both. A coordinator started against a Postgres port where nothing answers stays up and says why.
 */
import { afterAll, describe, expect, it } from "vitest";
import { defaultConfig } from "../../src/config/index.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { TEST_BUS_SECRET_ENV, TEST_BUS_SECRETS } from "../support/bus-auth.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { FLAGS_ON_ENV } from "../support/env.js";
import { missingServiceBinaries, startOwnRedis, type OwnRedis } from "../support/own-services.js";
import { kill, spawnCli, type ManagedProcess } from "../support/processes.js";
import { waitForProgress, waitForTask } from "../support/wait.js";
import { freePort } from "../support/ports.js";

const ORG = "acme";
const missing = missingServiceBinaries();


/** Resolves once the process printed a line matching `pattern`; fails if it exits first or prints nothing new for a while. */
function printed(proc: ManagedProcess, pattern: RegExp): Promise<string> {
  return waitForProgress({
    what: `${proc.name} to print ${pattern}`,
    progress: async () => {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`${proc.name} exited:\n${proc.output()}`);
      return proc.output();
    },
    done: (output) => pattern.test(output),
    describeStuck: (output) => output.slice(-2000),
  });
}

describe.skipIf(missing !== undefined)("start-up during an outage", () => {
  const procs: ManagedProcess[] = [];
  let db: TestDatabase | undefined;
  let redis: OwnRedis | undefined;
  let runtime: Runtime | undefined;

  afterAll(async () => {
    await Promise.all(procs.map((p) => kill(p)));
    await runtime?.close();
    await redis?.close();
    await db?.drop();
  });

  it("a coordinator and a harness wait for Redis, then run a task", async () => {
    db = await createTestDatabase();
    await submitWorkflow(db.pool, ORG, parseWorkflowDefinition('name: one\nsteps:\n  - { id: a, to: "role:echo", timeout: 60s }\n'));
    const redisPort = await freePort();
    const env = {
      ...FLAGS_ON_ENV,
      DATABASE_URL: db.url,
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      SWITCHYARD_KEY_PREFIX: "outage:",
      SWITCHYARD_LOG_LEVEL: "info",
      SWITCHYARD_BUS_SECRET: TEST_BUS_SECRET_ENV,
    };
    const coordinator = spawnCli("coordinator", ["start", "coordinator"], env);
    const harness = spawnCli("harness", ["start", "harness", "--role", "echo", "--handler", "examples/handlers/echo.ts"], env);
    procs.push(coordinator, harness);
    await printed(coordinator, /redis is unreachable; waiting for it before starting/);
    await printed(harness, /redis (is )?unreachable/i);
    // Still waiting a while later, not exited.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(coordinator.child.exitCode, coordinator.output()).toBeNull();
    expect(harness.child.exitCode, harness.output()).toBeNull();

    redis = await startOwnRedis([redisPort]);
    await printed(coordinator, /coordinator started/);
    runtime = await createRuntime({ ...defaultConfig, databaseUrl: db.url, redisUrl: redis.url, logLevel: "silent", bus: { ...defaultConfig.bus, keyPrefix: "outage:" }, busAuth: { secrets: TEST_BUS_SECRETS, publisherKeys: [] } });
    const { taskId } = await runtime.tasks.start({ orgId: ORG, workflow: "one" });
    const done = await waitForTask(runtime.tasks, ORG, taskId);
    expect(done.status).toBe("completed");
  });

  it("a coordinator whose Postgres does not answer stays up and says so", async () => {
    const pgPort = await freePort();
    const coordinator = spawnCli("coordinator (no postgres)", ["start", "coordinator"], {
      ...FLAGS_ON_ENV,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${pgPort}/nowhere`,
      SWITCHYARD_KEY_PREFIX: "outage-pg:",
      SWITCHYARD_LOG_LEVEL: "info",
      SWITCHYARD_BUS_SECRET: TEST_BUS_SECRET_ENV,
    });
    procs.push(coordinator);
    await printed(coordinator, /postgres is unreachable; waiting for it before starting/);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(coordinator.child.exitCode, coordinator.output()).toBeNull();
  });
});
