/**
 * The sweep's safety net: a pending step whose needs are all complete (a transition that was lost) is found,
 * audited as a repair, and dispatched once — even though no event and no due time would ever move it.
 * The lost transition is made by hand (a step row marked completed behind the engine's back).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { COORDINATOR_GROUP, Coordinator } from "../../src/coordinator/coordinator.js";
import { streamKey } from "../../src/bus/keys.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { DependencyHealth } from "../../src/process/dependency-health.js";

const ORG = "acme";
const WORKFLOW = `
name: pair
steps:
  - { id: a, to: "role:w", needs: [], timeout: 10m }
  - { id: b, to: "role:w", needs: [], timeout: 10m }
  - { id: join, to: "role:w", needs: [a, b], timeout: 10m }
`;

describe("stranded step repair", () => {
  let rt: TestRuntime;
  let coordinator: Coordinator;

  beforeEach(async () => {
    rt = await createTestRuntime();
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(WORKFLOW));
    await rt.bus.ensureGroup(COORDINATOR_STREAM, COORDINATOR_GROUP);
    // Driven by sweepOnce(), never started; the repair looks every sweep and needs no quiet time.
    coordinator = new Coordinator({
      pool: rt.pool,
      store: rt.stores.coordinator,
      bus: rt.bus,
      engine: rt.engine,
      verifier: rt.busAuth.verifier(),
      publisher: rt.publisher,
      consumer: "sweeper",
      batchSize: 10,
      blockMs: 0,
      reclaimIdleMs: 60_000,
      sweepIntervalMs: 60_000,
      trimMaxLen: rt.config.bus.trimMaxLen,
      metrics: rt.metrics,
      strandedRepair: { intervalMs: 0, quietMs: 0 },
    });
  });
  afterEach(async () => {
    await rt.cleanup();
  });

  /** Marks steps completed without the engine: what a lost transition leaves behind. */
  async function completeBehindTheEnginesBack(taskId: string, stepIds: string[]): Promise<void> {
    await rt.pool.query(`UPDATE steps SET status = 'completed', output = '{}', due_at_ms = NULL WHERE task_id = $1 AND step_id = ANY($2)`, [taskId, stepIds]);
  }

  async function stepStates(taskId: string): Promise<Record<string, string>> {
    const { rows } = await rt.pool.query<{ step_id: string; status: string; attempt: number }>("SELECT step_id, status, attempt FROM steps WHERE task_id = $1", [taskId]);
    return Object.fromEntries(rows.map((r) => [r.step_id, `${r.status}#${r.attempt}`]));
  }

  it("dispatches a stranded fan-in once, audited, and leaves waiting steps alone", async () => {
    const stranded = (await rt.tasks.start({ orgId: ORG, workflow: "pair" })).taskId;
    const waiting = (await rt.tasks.start({ orgId: ORG, workflow: "pair" })).taskId;
    await completeBehindTheEnginesBack(stranded, ["a", "b"]);
    // Only one need complete: the join rightly waits for b.
    await completeBehindTheEnginesBack(waiting, ["a"]);

    const queued = () => rt.redis.xlen(streamKey(rt.prefix, "role:w"));
    const before = await queued();
    await coordinator.sweepOnce();
    expect(await stepStates(stranded)).toEqual({ a: "completed#1", b: "completed#1", join: "dispatched#1" });
    expect(await stepStates(waiting)).toEqual({ a: "completed#1", b: "dispatched#1", join: "pending#0" });

    // A second sweep finds nothing left to repair.
    await coordinator.sweepOnce();
    const { rows } = await rt.pool.query<{ task_id: string; action: string; step_id: string; actor: string; verdict: string }>(
      "SELECT task_id, action, step_id, actor, verdict FROM audit_log WHERE action IN ('repair', 'dispatch') AND step_id = 'join'",
    );
    expect(rows).toEqual([
      { task_id: stranded, action: "repair", step_id: "join", actor: "coordinator", verdict: "repaired" },
      { task_id: stranded, action: "dispatch", step_id: "join", actor: "coordinator", verdict: "allow" },
    ]);
    const metric = await rt.metrics.registry.getSingleMetricAsString("switchyard_stranded_steps_repaired_total");
    expect(metric).toMatch(/switchyard_stranded_steps_repaired_total 1$/m);
    // The repaired dispatch went out on the bus like any other, once.
    expect(await queued()).toBe(before + 1);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("leaves closed tasks and recently moved steps alone", async () => {
    const cancelled = (await rt.tasks.start({ orgId: ORG, workflow: "pair" })).taskId;
    await rt.tasks.cancel(ORG, cancelled, "test", "not needed");
    const fresh = (await rt.tasks.start({ orgId: ORG, workflow: "pair" })).taskId;
    await completeBehindTheEnginesBack(fresh, ["a", "b"]);
    const patient = new Coordinator({ ...coordinatorOptions(), strandedRepair: { intervalMs: 0, quietMs: 60_000 } });

    await patient.sweepOnce();
    expect((await stepStates(fresh)).join).toBe("pending#0");
    // It took every shard; the other coordinator gets them once it hands them over.
    await patient.close();
    await coordinator.sweepOnce();
    expect((await stepStates(fresh)).join).toBe("dispatched#1");
    expect((await stepStates(cancelled)).join).toBe("cancelled#0");
  });

  it("after a Redis outage, a task whose start event may have been lost gets its first steps within the usual quiet time", async () => {
    // The start event (an inbox envelope) is lost: the task and its pending steps are written, nothing dispatched.
    const lost = (await rt.tasks.start({ orgId: ORG, workflow: "pair" })).taskId;
    await rt.pool.query(`UPDATE steps SET status = 'pending', attempt = 0, due_at_ms = NULL, updated_at = now() - interval '3 seconds' WHERE task_id = $1`, [lost]);
    const health = new DependencyHealth();
    await coordinator.close();
    const patient = new Coordinator({ ...coordinatorOptions(), health, strandedRepair: { intervalMs: 0, quietMs: 1_000 } });

    // A first step waits 12 × the quiet time: its start event may still be queued in a busy inbox.
    await patient.sweepOnce();
    expect(await stepStates(lost)).toEqual({ a: "pending#0", b: "pending#0", join: "pending#0" });
    // Redis was away and is back (a restart may have lost its data): the usual quiet time is enough now.
    health.unreachable("redis", new Error("connection closed"));
    health.reachable("redis");
    await patient.sweepOnce();
    expect(await stepStates(lost)).toEqual({ a: "dispatched#1", b: "dispatched#1", join: "pending#0" });
    await patient.close();
  });

  function coordinatorOptions(): ConstructorParameters<typeof Coordinator>[0] {
    return {
      pool: rt.pool,
      store: rt.stores.coordinator,
      bus: rt.bus,
      engine: rt.engine,
      verifier: rt.busAuth.verifier(),
      publisher: rt.publisher,
      consumer: "patient",
      batchSize: 10,
      blockMs: 0,
      reclaimIdleMs: 60_000,
      sweepIntervalMs: 60_000,
      trimMaxLen: rt.config.bus.trimMaxLen,
    };
  }
});
