/**
 * A harness that read its role and was then switched off: `task watch` says how long nobody has read the role
 * and which flag keeps the harness away — from a real harness paused by the flags table.
 */
import { testBusAuth } from "../support/bus-auth.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { loadConfig } from "../../src/config/index.js";
import { LiveFlags } from "../../src/flags/live-flags.js";
import { createPostgresFlagStore } from "../../src/store/flags/postgres-flag-store.js";
import { createHarness, type Harness } from "../../src/harness/harness.js";
import echo from "../../examples/handlers/echo.js";
import { waitForProgress } from "../support/wait.js";
import { createCliEnvironment, ONE_STEP_WORKFLOW, type CliEnvironment } from "./helpers.js";

let cli: CliEnvironment;
let flags: LiveFlags;
let harness: Harness;
let bus: ReturnType<typeof createRedisBus>;
let running: Promise<void>;

beforeAll(async () => {
  cli = await createCliEnvironment();
  expect((await cli.run(["workflow", "submit", await cli.file("one.yaml", ONE_STEP_WORKFLOW), "--tenant", "acme"])).code).toBe(0);
  const config = loadConfig(cli.env);
  flags = new LiveFlags({ db: cli.db.pool, store: createPostgresFlagStore(), defaults: config.flags, pollMs: 100 });
  await flags.refresh();
  flags.start();
  bus = createRedisBus({ redis: cli.redis.redis, keyPrefix: cli.redis.prefix, maxPayloadBytes: config.bus.maxPayloadBytes, maxDeliveries: 5 });
  harness = createHarness({ bus, role: "echo", handler: echo, signer: testBusAuth().signer("role:echo"), flags, maxPayloadBytes: config.bus.maxPayloadBytes, reclaimIdleMs: 30_000, heartbeatMs: 1_000, shutdownGraceMs: 500, blockMs: 100 });
  running = harness.start();
});
afterAll(async () => {
  await harness?.close();
  await running;
  await flags?.stop();
  await bus?.close();
  await cli?.cleanup();
});

describe("a paused harness", () => {
  it("is explained as not reading the role for N s, with the flag that paused it", async () => {
    // The harness reads a first task (no coordinator runs, so the task itself stays dispatched).
    await cli.run(["task", "start", "one-step", "--tenant", "acme"]);
    await waitForProgress({ what: "the harness to run a turn", progress: () => harness.stats.completed, done: (n) => n >= 1 });
    expect((await cli.run(["flags", "set", "HARNESS_ENABLED", "off", "--role", "echo", "--reason", "draining"])).code).toBe(0);
    await waitForProgress({ what: "the harness to pause", progress: () => harness.stats.paused, done: (paused) => paused });

    const started = await cli.run(["task", "start", "one-step", "--tenant", "acme"]);
    const watched = await cli.run(["task", "watch", started.last, "--tenant", "acme", "--timeout", "8", "--explain-after", "1"]);
    expect(watched.code).toBe(1);
    expect(watched.stdout).toMatch(/  step only: no harness has read role:echo for \d+ s \(1 entry waiting\); HARNESS_ENABLED is off for role:echo \(flags table\)\n/);
    expect(harness.stats.completed).toBe(1);
  });
});
