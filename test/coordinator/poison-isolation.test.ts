/**
 * One poison inbox entry must not take its batch down with it: when the batch transaction fails, the coordinator
 * applies the batch again task by task, acknowledges the tasks that commit, and leaves only the failing task's
 * entries to redelivery and, after the bus's max deliveries, the dead letters.
 *
 * The poison is real: a worker's RESULT whose output holds a NUL character. It is valid JSON, but Postgres jsonb
 * refuses it ("unsupported Unicode escape sequence") when the step row is written, so the whole batch's steps
 * statement fails.
 */
import { publishSigned } from "../support/bus-auth.js";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { COORDINATOR_STREAM, type BusEntry } from "../../src/bus/bus.js";
import { EnvelopeKind, ResultStatus, createEnvelope, jsonPayload } from "../../src/bus/codec.js";
import { streamKey } from "../../src/bus/keys.js";
import { COORDINATOR_GROUP, Coordinator } from "../../src/coordinator/coordinator.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { createLogger } from "../../src/logger.js";
import { createPool, type Pool } from "../../src/store/db.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";

const ORG = "acme";
const MAX_DELIVERIES = 3;

describe("a poison entry in a coordinator batch", () => {
  let rt: TestRuntime;
  let logLines: Array<Record<string, unknown>>;
  const extraPools: Pool[] = [];

  beforeEach(async () => {
    rt = await createTestRuntime({ bus: { maxDeliveries: MAX_DELIVERIES } });
    logLines = [];
    // A long step timeout: nothing is re-dispatched while the test runs.
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition('name: one\nsteps:\n  - { id: a, to: "role:writer", timeout: 10m }\n'));
    await rt.bus.ensureGroup(COORDINATOR_STREAM, COORDINATOR_GROUP);
  });
  afterEach(async () => {
    await Promise.all(extraPools.splice(0).map((pool) => pool.end().catch(() => {})));
    await rt.cleanup();
  });

  /** A coordinator that is driven by `processBatch` (not started), logging into `logLines`. */
  function steppedCoordinator(pool: Pool = rt.pool): Coordinator {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split("\n").filter(Boolean)) logLines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    return new Coordinator({
      pool,
      store: rt.stores.coordinator,
      bus: rt.bus,
      engine: rt.engine,
      publisher: rt.publisher,
      verifier: rt.busAuth.verifier(),
      consumer: "stepped",
      batchSize: 50,
      blockMs: 0,
      reclaimIdleMs: 60_000,
      sweepIntervalMs: 60_000,
      trimMaxLen: rt.config.bus.trimMaxLen,
      logger: createLogger({ level: "info", destination: sink }),
    });
  }

  async function startTasks(n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await rt.tasks.start({ orgId: ORG, workflow: "one" })).taskId);
    return ids;
  }

  function result(taskId: string, output: unknown) {
    return createEnvelope({
      id: crypto.randomUUID(),
      orgId: ORG,
      taskId,
      stepId: "a",
      attempt: 1,
      kind: EnvelopeKind.RESULT,
      status: ResultStatus.OK,
      payload: jsonPayload(output),
    });
  }

  /** Publishes the envelopes and reads them back as one batch under the stepped coordinator's consumer. */
  async function batchOf(envelopes: ReturnType<typeof result>[]): Promise<BusEntry[]> {
    await publishSigned(rt, "role:writer", envelopes);
    const entries = await rt.bus.read({ stream: COORDINATOR_STREAM, group: COORDINATOR_GROUP, consumer: "stepped", count: 50, blockMs: 0 });
    expect(entries.map((e) => e.envelope.id)).toEqual(envelopes.map((e) => e.id));
    return entries;
  }

  /** [entry id, deliveries] of every entry pending in the coordinator's group. */
  async function pending(): Promise<Array<[string, number]>> {
    const rows = (await rt.redis.xpending(streamKey(rt.prefix, COORDINATOR_STREAM), COORDINATOR_GROUP, "-", "+", 100)) as [string, string, number, number][];
    return rows.map(([id, , , deliveries]) => [id, deliveries]);
  }

  it("keeps the one-transaction fast path when nothing fails", async () => {
    const tasks = await startTasks(3);
    const entries = await batchOf(tasks.map((taskId) => result(taskId, { text: "fine" })));
    const apply = vi.spyOn(rt.engine, "apply");
    await steppedCoordinator().processBatch(entries);
    // The coordinator cannot even take its shards (or, when it could, applies the batch once): never split.
    expect(apply.mock.calls.length).toBeLessThanOrEqual(1);
    for (const taskId of tasks) expect((await rt.tasks.get(ORG, taskId)).status).toBe("completed");
    expect(await pending()).toEqual([]);
  });

  it("commits and acknowledges the healthy tasks, and only the poison entry is redelivered and dead-lettered", async () => {
    const [healthyA, poisoned, healthyB] = await startTasks(3);
    const poison = result(poisoned!, { text: "bad\u0000byte" });
    // Two entries for healthy task A around the poison: a task's entries stay together and in order.
    const heartbeat = createEnvelope({
      id: crypto.randomUUID(),
      orgId: ORG,
      taskId: healthyA!,
      stepId: "a",
      attempt: 1,
      kind: EnvelopeKind.CONTROL,
      payload: jsonPayload({ type: "heartbeat" }),
    });
    const entries = await batchOf([heartbeat, poison, result(healthyA!, { text: "fine A" }), result(healthyB!, { text: "fine B" })]);
    const poisonEntry = entries[1]!.id;

    const apply = vi.spyOn(rt.engine, "apply");
    const stepped = steppedCoordinator();
    await stepped.processBatch(entries);
    // The batch, then one transaction per task: A (heartbeat + result together), the poison, B.
    expect(apply).toHaveBeenCalledTimes(4);
    expect(apply.mock.calls.slice(1).map(([, inputs]) => inputs.map((i) => [i.taskId, i.event.type]))).toEqual([
      [[healthyA, "heartbeat"], [healthyA, "result"]],
      [[poisoned, "result"]],
      [[healthyB, "result"]],
    ]);
    apply.mockRestore();

    for (const [taskId, text] of [[healthyA!, "fine A"], [healthyB!, "fine B"]] as const) {
      const task = await rt.tasks.get(ORG, taskId);
      expect(task.status).toBe("completed");
      expect(task.steps[0]).toMatchObject({ status: "completed", output: { text } });
    }
    const stuck = await rt.tasks.get(ORG, poisoned!);
    expect(stuck.status).toBe("running");
    expect(stuck.steps[0]).toMatchObject({ status: "dispatched", output: null });
    expect((await listAudit(rt.pool, ORG, { taskId: poisoned! })).map((a) => a.action)).toEqual(["dispatch"]);
    // Only the poison entry is still pending, after its first delivery.
    expect(await pending()).toEqual([[poisonEntry, 1]]);
    expect(await rt.bus.listDeadLetters(COORDINATOR_STREAM)).toEqual([]);
    // Logged: the batch failure, then the failing task with its tenant, task and envelope ids.
    expect(logLines.some((l) => l.level === 50 && String(l.msg).includes("task by task"))).toBe(true);
    const failed = logLines.find((l) => l.taskId === poisoned);
    expect(failed).toMatchObject({ level: 50, orgId: ORG, envelopeIds: [poison.id], entryIds: [poisonEntry] });
    expect(JSON.stringify(failed?.err)).toMatch(/Unicode escape sequence/);

    // A running coordinator reclaims it until it is over the max deliveries, then it is a dead letter. It owns the
    // tenant's shard once the stepped one has handed its shards over.
    await stepped.close();
    rt.startCoordinator({ reclaimIdleMs: 200 });
    const dead = await waitFor(async () => {
      const letters = await rt.bus.listDeadLetters(COORDINATOR_STREAM);
      return letters.length > 0 ? letters : undefined;
    }, { what: "the poison entry to be dead-lettered" });
    await new Promise((r) => setTimeout(r, 300));
    expect((await rt.bus.listDeadLetters(COORDINATOR_STREAM)).map((d) => d.originalId)).toEqual([poisonEntry]);
    expect(dead[0]).toMatchObject({ originalId: poisonEntry, deliveries: MAX_DELIVERIES + 1 });
    // The bus decided this one (too many deliveries), and the runtime's bus counts it.
    const counted = (await rt.metrics.deadLetters.get()).values.filter((v) => v.labels.reason === "MAX_DELIVERIES");
    expect(counted.map((v) => v.value)).toEqual([1]);
    expect(await pending()).toEqual([]);
    expect((await rt.tasks.get(ORG, poisoned!)).steps[0]).toMatchObject({ status: "dispatched", output: null });
    for (const taskId of [healthyA!, healthyB!]) {
      expect((await listAudit(rt.pool, ORG, { taskId })).map((a) => a.action)).toEqual(["dispatch", "result"]);
    }
  });

  it("does not split a batch when the database is unreachable", async () => {
    const tasks = await startTasks(3);
    const entries = await batchOf(tasks.map((taskId) => result(taskId, { text: "fine" })));
    // Nothing listens on port 1 of the loopback: every checkout is refused.
    const unreachable = createPool({ connectionString: "postgres://postgres@127.0.0.1:1/none", max: 2 });
    extraPools.push(unreachable);
    const apply = vi.spyOn(rt.engine, "apply");
    await expect(steppedCoordinator(unreachable).processBatch(entries)).rejects.toThrow(/ECONNREFUSED/);
    // The coordinator cannot even take its shards (or, when it could, applies the batch once): never split.
    expect(apply.mock.calls.length).toBeLessThanOrEqual(1);
    expect((await pending()).map(([id]) => id)).toEqual(entries.map((e) => e.id));
    expect(logLines.some((l) => String(l.msg).includes("task by task"))).toBe(false);
  });

  it("times out the other tasks' steps when one due step cannot be applied", async () => {
    const timed = (name: string) => parseWorkflowDefinition(`name: ${name}\nsteps:\n  - { id: a, to: "role:writer", timeout: 200ms, retries: 0 }\n`);
    await submitWorkflow(rt.pool, ORG, timed("fine"));
    await submitWorkflow(rt.pool, ORG, timed("broken"));
    const fine = (await rt.tasks.start({ orgId: ORG, workflow: "fine" })).taskId;
    const broken = (await rt.tasks.start({ orgId: ORG, workflow: "broken" })).taskId;
    // A definition that no longer parses as a workflow: loading that task throws inside the sweeper's batch.
    await rt.pool.query("UPDATE workflows SET definition = '{}'::jsonb WHERE org_id = $1 AND name = 'broken'", [ORG]);
    rt.workflows.clear();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const coordinator = steppedCoordinator();
    expect(await coordinator.sweepOnce()).toBe(2);
    expect((await rt.tasks.get(ORG, fine)).steps[0]).toMatchObject({ status: "failed", error: expect.objectContaining({ code: "TIMEOUT" }) });
    // Its view needs the definition too, so the step row is read directly.
    const { rows } = await rt.pool.query("SELECT status FROM steps WHERE task_id = $1", [broken]);
    expect(rows).toEqual([{ status: "dispatched" }]);
    expect(logLines.some((l) => l.taskId === broken && String(l.msg).includes("failed to apply"))).toBe(true);
  });
});
