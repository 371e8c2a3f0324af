/**
 * COORDINATOR_ENABLED per tenant: a switched-off tenant's inbox messages are held (never dropped, never
 * applied), its steps do not time out meanwhile, other tenants are unaffected; switched on again, the held
 * messages are applied exactly once — also by a coordinator started after the one that held them, or one that
 * took over the tenant's shard from it.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { heldStreamName } from "../../src/flags/held-inbox.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { Workers } from "../support/workers.js";
import { finished, flip, sleep, submit, within } from "./support.js";

const OFF = "paused-co";
const ON = "running-co";
const WORKFLOW = `
name: quick
steps:
  - { id: only, to: "role:echo", timeout: 1s, retries: 0 }
`;

describe("COORDINATOR_ENABLED per tenant", () => {
  let rt: TestRuntime;
  let workers: Workers;
  const runs: string[] = [];
  beforeEach(async () => {
    runs.length = 0;
    rt = await createTestRuntime();
    workers = new Workers(rt);
    for (const org of [OFF, ON]) await submit(rt, org, WORKFLOW);
    workers.start("echo", (work) => {
      runs.push(work.taskId);
      return { from: work.orgId };
    });
    await flip(rt, "COORDINATOR_ENABLED", "tenant", OFF, false);
    await rt.flags.refresh();
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  const heldLength = async () => (await rt.bus.stats(heldStreamName(OFF), "coordinator")).length;

  it("holds the tenant's messages past its step timeout, leaves other tenants alone, and applies them exactly once when switched on", async () => {
    rt.startCoordinator();
    const paused = await rt.tasks.start({ orgId: OFF, workflow: "quick" });
    const running = await rt.tasks.start({ orgId: ON, workflow: "quick" });
    expect((await finished(rt, ON, running.taskId)).status).toBe("completed");
    await within(5_000, async () => (await heldLength()) === 1, "the RESULT to be held");

    // Well past the 1 s step timeout: the sweeper skips the tenant, nothing times out, nothing is retried.
    await sleep(1_800);
    expect((await rt.tasks.get(OFF, paused.taskId))).toMatchObject({ status: "running", steps: [{ status: "dispatched", attempts: 1 }] });
    expect((await listAudit(rt.pool, OFF, { taskId: paused.taskId })).map((a) => a.action)).toEqual(["dispatch"]);
    expect((await rt.bus.stats("coordinator", "coordinator")).pending).toBe(0);

    // A crash between holding and acknowledging would leave the same envelope held twice; it still applies once.
    await rt.bus.ensureGroup(heldStreamName(OFF), "peek");
    const [heldEntry] = await rt.bus.read({ stream: heldStreamName(OFF), group: "peek", consumer: "test", count: 1, blockMs: 0 });
    expect(heldEntry!.envelope.taskId).toBe(paused.taskId);
    await rt.bus.ack(heldStreamName(OFF), "peek", [heldEntry!.id]);
    await rt.bus.publish([{ stream: heldStreamName(OFF), envelope: heldEntry!.envelope }]);

    await flip(rt, "COORDINATOR_ENABLED", "tenant", OFF, true);
    const task = await finished(rt, OFF, paused.taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ status: "completed", attempts: 1, output: { from: OFF } }] });
    expect((await listAudit(rt.pool, OFF, { taskId: paused.taskId })).map((a) => `${a.action}:${a.verdict}`)).toEqual(["dispatch:allow", "result:accepted"]);
    expect(runs.filter((id) => id === paused.taskId)).toHaveLength(1);
    await within(3_000, async () => (await rt.bus.stats(heldStreamName(OFF), "coordinator")).pending === 0, "the held entries to be acknowledged");
    expect(await verifyChain(rt.stores.audit, rt.pool, OFF)).toMatchObject({ ok: true });
  });

  it("a coordinator started later applies what an earlier one held", async () => {
    const first = rt.startCoordinator();
    const { taskId } = await rt.tasks.start({ orgId: OFF, workflow: "quick" });
    await within(5_000, async () => (await heldLength()) === 1, "the RESULT to be held");
    await first.close();

    await flip(rt, "COORDINATOR_ENABLED", "tenant", OFF, true);
    await rt.flags.refresh();
    rt.startCoordinator();
    const task = await finished(rt, OFF, taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ attempts: 1 }] });
    expect(runs).toEqual([taskId]);
  });

  it("a coordinator that takes over a tenant's shard applies what the shard's previous owner held", async () => {
    // A 10-minute step timeout: only the hold's own candidates, not a step coming due, can release the RESULT here.
    await submit(rt, OFF, "name: slow\nsteps:\n  - { id: only, to: \"role:echo\", timeout: 10m, retries: 0 }\n");
    const shards = { count: 64, leaseTtlMs: 1_000 };
    const coordinators = [rt.startCoordinator({ consumer: "hold-a", shards }), rt.startCoordinator({ consumer: "hold-b", shards })];
    await within(15_000, () => coordinators.every((c) => c.ownership.ownedShards().owned.length > 0), "the two coordinators to split the shards");
    // Both started before the task: neither found the tenant in flight when it started.
    const { taskId } = await rt.tasks.start({ orgId: OFF, workflow: "slow" });
    await within(5_000, async () => (await heldLength()) === 1, "the RESULT to be held");
    const holder = coordinators.find((c) => c.ownership.ownsTenant(OFF))!;
    const heir = coordinators.find((c) => c !== holder)!;
    await holder.close();
    await within(10_000, () => heir.ownership.ownsTenant(OFF), "the other coordinator to take the tenant's shard");

    await flip(rt, "COORDINATOR_ENABLED", "tenant", OFF, true);
    await rt.flags.refresh();
    expect(await finished(rt, OFF, taskId)).toMatchObject({ status: "completed", steps: [{ attempts: 1 }] });
    expect(runs).toEqual([taskId]);
    expect(await verifyChain(rt.stores.audit, rt.pool, OFF)).toMatchObject({ ok: true });
  });

  it("the global value switches every tenant off; the sweeper fires nobody's due steps meanwhile", async () => {
    rt.startCoordinator();
    await flip(rt, "COORDINATOR_ENABLED", "global", "", false);
    await rt.flags.refresh();
    const { taskId } = await rt.tasks.start({ orgId: ON, workflow: "quick" });
    await within(5_000, async () => (await rt.bus.stats(heldStreamName(ON), "coordinator")).length === 1, "the RESULT to be held");
    await sleep(1_500);
    expect((await rt.tasks.get(ON, taskId)).steps[0]).toMatchObject({ status: "dispatched", attempts: 1 });

    await flip(rt, "COORDINATOR_ENABLED", "global", "", true);
    expect((await finished(rt, ON, taskId)).status).toBe("completed");
  });
});
