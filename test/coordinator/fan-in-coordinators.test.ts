/**
 * Several coordinators — each with its own pool, caches and engine, as separate processes have — on one inbox
 * and one database, driving a fan-out/fan-in workflow with real harnesses. Branch RESULTs of one task arrive
 * together and land on different coordinators, which is where a decision on stale step states strands the
 * fan-in step (each coordinator sees the other branch unfinished). No faults: every task must complete, each
 * step attempt dispatched once and accepted once, and nothing may need the stranded-step repair.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Coordinator } from "../../src/coordinator/coordinator.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForTasks } from "../support/wait.js";
import { Workers } from "../support/workers.js";

const TENANTS = ["acme", "globex"];
// Long timeouts: on a loaded machine a timeout would add retries and blur the exact counts below.
const WORKFLOW = `
name: fan
steps:
  - { id: split, to: "role:fan", timeout: 120s }
  - { id: left, to: "role:fan", needs: [split], timeout: 120s }
  - { id: middle, to: "role:fan", needs: [split], timeout: 120s }
  - { id: right, to: "role:fan", needs: [split], timeout: 120s }
  - { id: join, to: "role:fan", needs: [left, middle, right], timeout: 120s }
  - { id: report, to: "role:fan", needs: [join], timeout: 120s }
`;
const STEPS = 6;

describe("fan-in with several coordinators", () => {
  let rt: TestRuntime | undefined;
  let workers: Workers | undefined;
  const others: Runtime[] = [];
  const coordinators: Coordinator[] = [];

  afterEach(async () => {
    await Promise.all(coordinators.splice(0).map((c) => c.close()));
    await workers?.stop();
    await Promise.all(others.splice(0).map((o) => o.close()));
    await rt?.cleanup();
  });

  /** A coordinator on a runtime of its own (pool, engine, caches), like a separate process. */
  async function startCoordinator(index: number): Promise<void> {
    const runtime = index === 0 ? rt! : await createRuntime(rt!.config);
    if (runtime !== rt) others.push(runtime);
    const coordinator = new Coordinator({
      pool: runtime.pool,
      store: runtime.stores.coordinator,
      bus: runtime.bus,
      engine: runtime.engine,
      verifier: runtime.busAuth.verifier(),
      publisher: runtime.publisher,
      consumer: `coordinator-${index}`,
      // Small batches spread one task's branch results over the coordinators.
      batchSize: 3,
      blockMs: rt!.config.bus.blockMs,
      reclaimIdleMs: rt!.config.bus.reclaimIdleMs,
      sweepIntervalMs: rt!.config.coordinator.sweepIntervalMs,
      trimMaxLen: rt!.config.bus.trimMaxLen,
      flags: runtime.flags,
      flagStore: runtime.stores.flags,
      // The repair would heal a stranded step and hide the bug this test is about.
      strandedRepair: false,
    });
    coordinators.push(coordinator);
    void coordinator.start();
  }

  for (const count of [2, 3]) {
    it(`${count} coordinators complete every task, each step attempt dispatched and accepted exactly once`, async () => {
      rt = await createTestRuntime();
      workers = new Workers(rt);
      for (const tenant of TENANTS) await submitWorkflow(rt.pool, tenant, parseWorkflowDefinition(WORKFLOW));
      for (let i = 0; i < count; i++) await startCoordinator(i);
      // Branches finish within a few ms of each other, so their RESULTs reach the inbox together.
      workers.start("fan", async (work) => {
        await new Promise((r) => setTimeout(r, Math.random() * 4));
        return { step: work.stepId };
      }, { concurrency: 32 });

      const tasks = 60;
      await Promise.all(Array.from({ length: tasks }, (_, i) => rt!.tasks.start({ orgId: TENANTS[i % 2]!, workflow: "fan", input: { i } })));

      // Fails when nothing moved for a while (stuck, not slow), naming the unfinished tasks and their steps.
      await waitForTasks(rt.pool, { expected: tasks });

      const { rows: stuck } = await rt.pool.query<{ task_id: string; steps: string }>(
        `SELECT task_id, string_agg(step_id || '=' || status || '#' || attempt, ' ' ORDER BY step_id) AS steps
         FROM steps WHERE task_id IN (SELECT id FROM tasks WHERE status <> 'completed') GROUP BY task_id LIMIT 5`,
      );
      expect(stuck, "tasks that did not complete, with their steps").toEqual([]);
      const { rows: taskRows } = await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM tasks WHERE status = 'completed'");
      expect(taskRows[0]!.n).toBe(tasks);

      // From the audit table: per (task, step) one dispatch and one accepted result, since every step ran once.
      const { rows: counts } = await rt.pool.query<{ action: string; verdict: string; n: number; steps: number }>(
        `SELECT action, verdict, count(*)::int AS n, count(DISTINCT (task_id, step_id))::int AS steps
         FROM audit_log WHERE action IN ('dispatch', 'result', 'timeout', 'repair') GROUP BY action, verdict ORDER BY action, verdict`,
      );
      expect(counts).toEqual([
        { action: "dispatch", verdict: "allow", n: tasks * STEPS, steps: tasks * STEPS },
        { action: "result", verdict: "accepted", n: tasks * STEPS, steps: tasks * STEPS },
      ]);
      const { rows: attempts } = await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM steps WHERE attempt <> 1");
      expect(attempts[0]!.n).toBe(0);
      for (const tenant of TENANTS) expect((await verifyChain(rt.stores.audit, rt.pool, tenant)).ok).toBe(true);
    });
  }
});
