/**
 * Flags changed in the table are obeyed by a RUNNING coordinator and harness within 2 seconds, without a
 * restart; a switched-off harness finishes what it holds and takes nothing new; BUS_ENABLED off stops reading
 * and publishing (outbox rows wait in Postgres) until it is on again.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import type { Handler } from "../../src/harness/index.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { Workers } from "../support/workers.js";
import { deferred, finished, flip, sleep, submit, within } from "./support.js";

const ORG = "acme";
const echo: Handler = (work) => ({ echoed: work.stepId });

describe("live flags in running processes", () => {
  let rt: TestRuntime;
  let workers: Workers;
  beforeEach(async () => {
    rt = await createTestRuntime();
    workers = new Workers(rt);
    await submit(rt, ORG, `
name: one
steps:
  - { id: only, to: "role:echo", timeout: 30s }
`);
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  it("a running harness stops and resumes taking work within 2 s of a flag change", async () => {
    rt.startCoordinator();
    const harness = workers.start("echo", echo);
    const first = await rt.tasks.start({ orgId: ORG, workflow: "one" });
    expect((await finished(rt, ORG, first.taskId)).status).toBe("completed");

    await flip(rt, "HARNESS_ENABLED", "role", "echo", false);
    const pausedAfter = await within(2_000, () => harness.stats.paused, "the harness to pause");
    expect(pausedAfter).toBeLessThanOrEqual(2_000);

    await flip(rt, "HARNESS_ENABLED", "role", "echo", true);
    await within(2_000, () => !harness.stats.paused, "the harness to resume");
    const second = await rt.tasks.start({ orgId: ORG, workflow: "one" });
    expect((await finished(rt, ORG, second.taskId)).status).toBe("completed");

    // The global value is a master switch: off globally pauses the role although its own value is on.
    await flip(rt, "HARNESS_ENABLED", "global", "", false);
    await within(2_000, () => harness.stats.paused, "the harness to pause on the global switch");
  });

  it("a running coordinator holds a switched-off tenant's results within 2 s, and applies them within 2 s of switching it on", async () => {
    rt.startCoordinator();
    workers.start("echo", echo);
    await flip(rt, "COORDINATOR_ENABLED", "tenant", ORG, false);
    await sleep(2_000);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one" });
    await within(5_000, async () => (await rt.bus.stats(`held:${ORG}`, "coordinator")).length === 1, "the result to be held");
    expect((await rt.tasks.get(ORG, taskId)).steps[0]).toMatchObject({ status: "dispatched", attempts: 1 });

    const switchedOn = Date.now();
    await flip(rt, "COORDINATOR_ENABLED", "tenant", ORG, true);
    const task = await finished(rt, ORG, taskId);
    expect(Date.now() - switchedOn).toBeLessThanOrEqual(2_000);
    expect(task.status).toBe("completed");
  });

  it("a switched-off harness role finishes the turn it holds and takes no new work until switched on", async () => {
    await submit(rt, ORG, `
name: slow
steps:
  - { id: only, to: "role:slow", timeout: 30s }
`);
    rt.startCoordinator();
    const gate = deferred();
    const runs: string[] = [];
    const harness = workers.start("slow", async (work) => {
      runs.push(work.taskId);
      if (runs.length === 1) await gate.promise;
      return { run: runs.length };
    });
    const held = await rt.tasks.start({ orgId: ORG, workflow: "slow" });
    await within(5_000, () => runs.length === 1, "the first turn to start");

    await flip(rt, "HARNESS_ENABLED", "role", "slow", false);
    await within(2_000, () => harness.stats.paused, "the harness to pause");
    expect(harness.stats.inFlight).toBe(1);
    const waiting = await rt.tasks.start({ orgId: ORG, workflow: "slow" });

    // The turn in flight runs to the end and its outcome is applied.
    gate.resolve();
    const done = await finished(rt, ORG, held.taskId);
    expect(done).toMatchObject({ status: "completed", steps: [{ status: "completed", attempts: 1, output: { run: 1 } }] });

    // Nothing new is read while switched off: the second task's WORK waits on the stream, undelivered.
    await sleep(1_500);
    expect(runs).toEqual([held.taskId]);
    expect((await rt.tasks.get(ORG, waiting.taskId)).steps[0]).toMatchObject({ status: "dispatched", attempts: 1 });
    expect(await rt.bus.stats("role:slow", "harness")).toMatchObject({ pending: 0 });

    await flip(rt, "HARNESS_ENABLED", "role", "slow", true);
    const resumed = await finished(rt, ORG, waiting.taskId);
    expect(resumed).toMatchObject({ status: "completed", steps: [{ attempts: 1, output: { run: 2 } }] });
    expect(runs).toEqual([held.taskId, waiting.taskId]);
  });

  it("BUS_ENABLED off: nothing is read or published; outbox rows wait in Postgres and go out once it is on", async () => {
    rt.startCoordinator();
    const runs: string[] = [];
    const harness = workers.start("echo", (work) => {
      runs.push(work.taskId);
      return { ok: true };
    });
    await flip(rt, "BUS_ENABLED", "global", "", false);
    // The harness, the coordinator and the task service's publisher read the same live flags.
    await within(2_000, () => harness.stats.paused, "the harness to pause");

    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one" });
    await sleep(1_500);
    const outbox = await rt.pool.query<{ stream: string }>("SELECT stream FROM outbox WHERE org_id = $1", [ORG]);
    expect(outbox.rows).toEqual([{ stream: "role:echo" }]);
    expect((await rt.bus.stats("role:echo", "harness")).length).toBe(0);
    expect(runs).toEqual([]);
    expect((await rt.tasks.get(ORG, taskId)).steps[0]).toMatchObject({ status: "dispatched", attempts: 1 });

    await flip(rt, "BUS_ENABLED", "global", "", true);
    const task = await finished(rt, ORG, taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ attempts: 1 }] });
    expect(runs).toEqual([taskId]);
    expect((await rt.pool.query("SELECT 1 FROM outbox WHERE org_id = $1", [ORG])).rowCount).toBe(0);
    expect((await listAudit(rt.pool, ORG, { taskId })).map((a) => a.action)).toEqual(["dispatch", "result"]);
  });
});
