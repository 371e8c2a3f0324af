/**
 * A coordinator's engine keeps its tenants' audit heads in memory (governance/audit-heads.ts) while other writers
 * append to the same chains the locking way: task starts and cancels through TaskService, as the API does. The
 * coordinator's next batch then finds its cached head moved (STALE_HEAD), is rolled back and applied again under
 * the head lock. Proven here on the real database: the chain verifies, every step result is applied and audited
 * once, and while no one else writes, the coordinator's batches no longer lock the head first.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EngineInput } from "../../src/coordinator/engine.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import type { Pool, PoolClient } from "../../src/store/db.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";

const ORG = "heads";
const WORKFLOW = "name: chain3\nsteps:\n  - { id: a, to: \"role:w\" }\n  - { id: b, to: \"role:w\", needs: [a] }\n  - { id: c, to: \"role:w\", needs: [b] }\n";

/** The pool, with the text of every statement its transactions run recorded in `log`. */
function recordingPool(pool: Pool, log: string[]): Pool {
  const wrap = (client: PoolClient): PoolClient =>
    new Proxy(client, {
      get: (target, property, receiver) =>
        property === "query"
          ? (text: string, values?: unknown[]) => {
              log.push(text);
              return target.query(text, values);
            }
          : Reflect.get(target, property, receiver),
    });
  return new Proxy(pool, {
    get: (target, property, receiver) => (property === "connect" ? async () => wrap(await target.connect()) : Reflect.get(target, property, receiver)),
  });
}

const locksHead = (log: readonly string[]) => log.some((text) => text.includes("INSERT INTO audit_heads"));

describe("audit heads in memory beside other writers of the chain", () => {
  let rt: TestRuntime;
  // The engine's clock: a tenant found stale is kept out of the cache for a while (audit-heads.ts).
  let now = Date.now();
  beforeAll(async () => {
    rt = await createTestRuntime({ clock: () => now });
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(WORKFLOW));
  });
  afterAll(async () => {
    await rt?.cleanup();
  });

  // The coordinator's view of the engine; this process owns every shard (the fence itself is tested elsewhere).
  const coordinator = () => rt.engine.fenced({ fence: async () => {} });

  /** A worker's successful RESULT for every step of these tasks that is dispatched now. */
  async function results(taskIds: readonly string[]): Promise<EngineInput[]> {
    const { rows } = await rt.pool.query<{ task_id: string; step_id: string; attempt: number }>(
      "SELECT task_id, step_id, attempt FROM steps WHERE task_id = ANY($1) AND status = 'dispatched' ORDER BY task_id, step_id",
      [taskIds],
    );
    return rows.map((s) => ({
      orgId: ORG,
      taskId: s.task_id,
      dedupe: true,
      event: { type: "result", eventId: `result:${s.task_id}:${s.step_id}:${s.attempt}`, stepId: s.step_id, attempt: s.attempt, sender: { kind: "queue", endpoint: "role:w" }, ok: true, output: { s: s.step_id }, error: null, cost: 0, payloadHash: "" },
    }));
  }

  async function doubledAuditRows(): Promise<unknown[]> {
    const { rows } = await rt.pool.query(
      "SELECT task_id, step_id, action, verdict, envelope_id, count(*)::int AS n FROM audit_log WHERE org_id = $1 GROUP BY 1, 2, 3, 4, 5 HAVING count(*) > 1",
      [ORG],
    );
    return rows;
  }

  it("retries a batch whose cached head an API write moved, and stops locking the head while no one else writes", async () => {
    const engine = coordinator();
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "chain3" });
    const { taskId: other } = await rt.tasks.start({ orgId: ORG, workflow: "chain3" });
    const batch = async (taskIds: string[]): Promise<string[]> => {
      const log: string[] = [];
      await engine.apply(recordingPool(rt.pool, log), await results(taskIds));
      return log;
    };
    expect(locksHead(await batch([taskId]))).toBe(true); // nothing cached yet

    // Another writer appends between two coordinator batches: a task started through the API.
    const { taskId: third } = await rt.tasks.start({ orgId: ORG, workflow: "chain3" });
    const stale = await batch([taskId]);
    expect(stale.filter((t) => t === "ROLLBACK")).toHaveLength(1); // the optimistic try, found stale
    expect(locksHead(stale)).toBe(true); // applied again under the lock

    // The tenant's chain has another busy writer: for a while its batches lock the head rather than risk a retry.
    const cooling = await batch([taskId]);
    expect(locksHead(cooling)).toBe(true);
    expect(cooling).not.toContain("ROLLBACK");
    now += 6_000;
    expect(locksHead(await batch([other]))).toBe(true); // read under the lock, cached again after COMMIT
    // Nobody else wrote since: one statement for the audit, no head lock.
    const cached = await batch([other, third]);
    expect(locksHead(cached)).toBe(false);
    expect(cached).not.toContain("ROLLBACK");

    expect((await rt.tasks.get(ORG, taskId)).status).toBe("completed");
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
    expect(await doubledAuditRows()).toEqual([]);
  });

  it("keeps the chain whole while task starts and cancels through the API race the coordinator's batches", async () => {
    const engine = coordinator();
    const running: string[] = [];
    for (let i = 0; i < 4; i++) running.push((await rt.tasks.start({ orgId: ORG, workflow: "chain3" })).taskId);
    const cancelled: string[] = [];
    for (let round = 0; round < 12; round++) {
      const batch = await results(running);
      // The API writes while the batch is applied: a start each round, a cancel every third.
      const api = async () => {
        running.push((await rt.tasks.start({ orgId: ORG, workflow: "chain3" })).taskId);
        if (round % 3 === 2) {
          const victim = running.shift()!;
          cancelled.push(victim);
          await rt.tasks.cancel(ORG, victim, "user:test", "racing the coordinator");
        }
      };
      await Promise.all([engine.apply(rt.pool, batch), api()]);
    }
    // Drain without other writers: every task that was not cancelled finishes.
    for (let more = await results(running); more.length > 0; more = await results(running)) await engine.apply(rt.pool, more);
    for (const taskId of running) expect((await rt.tasks.get(ORG, taskId)).status).toBe("completed");
    for (const taskId of cancelled) expect(["cancelled", "completed"]).toContain((await rt.tasks.get(ORG, taskId)).status);
    const verified = await verifyChain(rt.stores.audit, rt.pool, ORG);
    expect(verified.ok).toBe(true);
    expect(await doubledAuditRows()).toEqual([]);
    // Every step of every task dispatched once (each attempt one WORK), whoever wrote around it.
    const { rows } = await rt.pool.query<{ attempts: number }>("SELECT max(attempt)::int AS attempts FROM steps WHERE org_id = $1", [ORG]);
    expect(rows[0]!.attempts).toBe(1);
  });
});
