/**
 * No timeouts while Redis is away: finished work may be waiting in the harnesses to be published, and timing it out
 * would run it again (or fail a FOREIGN step that actually finished). Once the outage ends, due steps wait for the
 * inbox backlog to be read — here nothing reads it, so they wait the catch-up limit — and then fire.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { COORDINATOR_GROUP, Coordinator } from "../../src/coordinator/coordinator.js";
import { DependencyHealth } from "../../src/process/dependency-health.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";

const ORG = "acme";

describe("the sweep through a Redis outage", () => {
  let rt: TestRuntime;
  let now = Date.now();

  beforeEach(async () => {
    rt = await createTestRuntime({ clock: () => now });
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition('name: one\nsteps:\n  - { id: a, to: "role:w", timeout: 1s, retries: 1 }\n'));
    await rt.bus.ensureGroup(COORDINATOR_STREAM, COORDINATOR_GROUP);
  });
  afterEach(async () => {
    await rt.cleanup();
  });

  it("fires no timeout during the outage, and only after the catch-up once it ends", async () => {
    const health = new DependencyHealth();
    const coordinator = new Coordinator({
      pool: rt.pool,
      store: rt.stores.coordinator,
      bus: rt.bus,
      engine: rt.engine,
      publisher: rt.publisher,
      verifier: rt.busAuth.verifier(),
      consumer: "sweeper",
      batchSize: 10,
      blockMs: 0,
      reclaimIdleMs: 60_000,
      sweepIntervalMs: 60_000,
      trimMaxLen: rt.config.bus.trimMaxLen,
      clock: () => now,
      health,
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one" });
    const attempt = async () => (await rt.pool.query<{ attempt: number }>("SELECT attempt FROM steps WHERE task_id = $1", [taskId])).rows[0]!.attempt;

    health.unreachable("redis", new Error("Connection is closed."));
    now += 5_000;
    expect(await coordinator.sweepOnce()).toBe(0);
    expect(await attempt()).toBe(1);

    health.reachable("redis");
    // Back, but the inbox has not been read since: the results it may hold come first.
    expect(await coordinator.sweepOnce()).toBe(0);
    now += 11_000;
    expect(await coordinator.sweepOnce()).toBe(1);
    expect(await attempt()).toBe(2);

    // A Postgres outage this process believes in while the database answers again: the sweep finds it back itself
    // (nothing else may be asking), then catches up before the next timeout.
    health.unreachable("postgres", new Error("Connection terminated unexpectedly"));
    now += 60_000;
    expect(await coordinator.sweepOnce()).toBe(0);
    expect(health.isReachable("postgres")).toBe(true);
    now += 11_000;
    expect(await coordinator.sweepOnce()).toBe(1);
  });
});
