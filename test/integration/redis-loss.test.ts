/**
 * Postgres is the source of truth and Redis the transport: losing Redis's data mid-run strands nothing, and
 * several coordinators share one inbox without doubling anything.
 */
import { afterEach, describe, expect, it } from "vitest";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { describeUnfinishedTasks, waitForProgress, waitForTasks } from "../support/wait.js";
import { Workers } from "../support/workers.js";

const ORG = "acme";
const WORKFLOW = `
name: three
steps:
  - { id: one, to: "role:echo", retries: 5, timeout: 1s, cost_estimate: 1 }
  - { id: two, to: "role:echo", retries: 5, timeout: 1s, cost_estimate: 1 }
  - { id: three, to: "role:echo", retries: 5, timeout: 1s, cost_estimate: 1 }
`;

/** Waits while tasks keep moving (fails naming the stuck ones when nothing moves), then counts them per status. */
async function allFinished(rt: TestRuntime, expected: number) {
  await waitForTasks(rt.pool, { expected });
  const { rows } = await rt.pool.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM tasks GROUP BY status");
  return rows;
}

/** Exactly one accepted result per step, and task cost equal to the accepted results' cost. */
async function assertExactlyOnce(rt: TestRuntime) {
  const doubled = await rt.pool.query(
    `SELECT task_id, step_id, count(*) FROM audit_log WHERE action = 'result' AND verdict = 'accepted' GROUP BY 1, 2 HAVING count(*) <> 1`,
  );
  expect(doubled.rows).toEqual([]);
  const missing = await rt.pool.query(
    `SELECT s.task_id, s.step_id FROM steps s WHERE s.status = 'completed' AND NOT EXISTS (
       SELECT 1 FROM audit_log a WHERE a.task_id = s.task_id::text AND a.step_id = s.step_id AND a.action = 'result' AND a.verdict = 'accepted')`,
  );
  expect(missing.rows).toEqual([]);
  const cost = await rt.pool.query(
    `SELECT t.id, t.cost, (SELECT coalesce(sum(a.cost), 0) FROM audit_log a WHERE a.task_id = t.id::text AND a.action = 'result' AND a.verdict = 'accepted') AS accepted
     FROM tasks t`,
  );
  for (const row of cost.rows) expect(row.cost).toBeCloseTo(row.accepted, 6);
}

describe("Redis loss and several coordinators", () => {
  let rt: TestRuntime | undefined;
  let workers: Workers | undefined;
  afterEach(async () => {
    await workers?.stop();
    await rt?.cleanup();
  });

  it("every task still completes after the Redis database is flushed mid-run", async () => {
    // A database of its own, so FLUSHDB touches nothing of the tests running beside this one.
    rt = await createTestRuntime({ redisDb: 9 });
    workers = new Workers(rt);
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(WORKFLOW));
    rt.startCoordinator();
    workers.start("echo", async (work, ctx) => {
      ctx.usage({ cost: 0.5 });
      await new Promise((r) => setTimeout(r, 20));
      return { step: work.stepId };
    });
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await rt.tasks.start({ orgId: ORG, workflow: "three", input: { i } })).taskId);
    await waitForProgress({
      what: "20 completed steps before Redis loses its data",
      progress: async () => (await rt!.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM steps WHERE status = 'completed'")).rows[0]!.n,
      done: (completed) => completed >= 20,
      describeStuck: () => describeUnfinishedTasks(rt!.pool),
    });
    expect(await rt.redis.flushdb()).toBe("OK");
    const statuses = await allFinished(rt, ids.length);
    expect(statuses).toEqual([{ status: "completed", n: ids.length }]);
    await assertExactlyOnce(rt);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("three coordinators on one inbox complete every task once, and the chain never forks", async () => {
    rt = await createTestRuntime();
    workers = new Workers(rt);
    // Long timeouts: on a loaded machine a 1 s timeout would add timeout/retry rows and blur the exact count below.
    const patient = WORKFLOW.replace(/timeout: 1s/g, "timeout: 60s");
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(patient));
    await submitWorkflow(rt.pool, "globex", parseWorkflowDefinition(patient));
    for (let i = 0; i < 3; i++) rt.startCoordinator({ batchSize: 7 });
    workers.start("echo", async (work, ctx) => {
      ctx.usage({ cost: 0.25 });
      return { step: work.stepId };
    }, { concurrency: 20 });
    const starts = [];
    for (let i = 0; i < 60; i++) starts.push(rt.tasks.start({ orgId: i % 2 ? ORG : "globex", workflow: "three", input: { i } }));
    await Promise.all(starts);
    const statuses = await allFinished(rt, 60);
    expect(statuses).toEqual([{ status: "completed", n: 60 }]);
    await assertExactlyOnce(rt);
    for (const org of [ORG, "globex"]) {
      const verdict = await verifyChain(rt.stores.audit, rt.pool, org);
      expect(verdict.ok).toBe(true);
      expect(verdict.rows).toBe(30 * 6);
    }
  });
});
