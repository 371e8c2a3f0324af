/**
 * Fan-out delegation (issue 14) at its bounds: the depth ceiling with a fan-out tree, the cap on sub-queries
 * outstanding per step and the cap on sub-queries asked per attempt (DELEGATION_LIMIT, a clear message, no retry).
 */
import { afterEach, describe, expect, it } from "vitest";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { MAX_DELEGATION_DEPTH } from "../../src/core/model.js";
import type { Handler } from "../../src/harness/index.js";
import type { Config } from "../../src/config/index.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { ORG, auditOf, counterTotal, rowsOf, submit, delegationSteps } from "./fan-out-support.js";

let rt: TestRuntime;
let workers: Workers;

async function setUp(coordinator: Partial<Config["coordinator"]> = {}): Promise<void> {
  rt = await createTestRuntime({ coordinator });
  workers = new Workers(rt);
  rt.startCoordinator();
}

afterEach(async () => {
  await workers.stop();
  await rt.cleanup();
});

const ORCHESTRATED = `
name: orchestrated
steps:
  - { id: orch, to: "role:orch", retries: 2, backoff: 50ms }
`;

/** Asks `first` sub-queries, then — once `after` replies were handed over — `then` more; finishes when nothing is out. */
function askInWaves(first: number, after: number, then: number): Handler {
  return (work, ctx) => {
    const ask = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ to: "role:w", payload: { n: from + i }, correlationId: `q${from + i}` }));
    if (!work.resume) return ctx.delegateAll(ask(1, first), { state: { replies: 0 } });
    const replies = (work.resume.state as { replies: number }).replies + 1;
    if (replies === after) return ctx.delegateAll(ask(first + 1, then), { state: { replies } });
    return work.resume.outstanding.length > 0 ? ctx.awaitMore({ replies }) : { replies };
  };
}

describe("fan-out and the depth ceiling", () => {
  it("fans out past the ceiling: no REPLY crosses it, the deepest work runs and is recorded, the task finishes", async () => {
    // Delegation steps time out after 2 s. Every origin in a chain waits on the one below, and the shallowest stood
    // down first, so it times out first: `s` hears back (errors, or answers if a deeper one unwound in time), completes,
    // and the delegations still open are cancelled with the task.
    await setUp({ defaultStepTimeoutMs: 2000 });
    await submit(rt.pool, `
name: tree
steps:
  - { id: s, to: "role:loop", timeout: 30s }
`);
    // Two branches at the top, one below, down to work depth 9 (past the ceiling: work there may not delegate
    // again): 18 delegates, 2 of them asked at depth >= 8.
    workers.start("loop", (work, ctx) => {
      if (work.resume) {
        const replies = [...(work.resume.state as { replies: string[] }).replies, `${work.resume.reply.correlationId}:${work.resume.reply.status}`];
        return work.resume.outstanding.length > 0 ? ctx.awaitMore({ replies }) : { depth: work.depth, replies };
      }
      if (work.depth > MAX_DELEGATION_DEPTH) return { depth: work.depth, leaf: true };
      const branches = work.depth === 0 ? 2 : 1;
      const queries = Array.from({ length: branches }, (_, i) => ({ to: "role:loop", payload: { from: work.depth }, correlationId: `depth${work.depth}-${i}` }));
      return ctx.delegateAll(queries, { state: { replies: [] } });
    });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "tree" });

    // Both deepest delegates (work depth 9, asked at query depth 8) ran and were recorded...
    await waitFor(async () => {
      const { rows } = await rt.pool.query("SELECT status FROM steps WHERE task_id = $1 AND depth = $2", [taskId, MAX_DELEGATION_DEPTH + 1]);
      return (rows.length === 2 && rows.every((r) => r.status === "completed")) || undefined;
    }, { what: "both depth-9 delegates to complete" });
    // ...their replies were held back at the ceiling and counted...
    expect(await waitFor(async () => ((await counterTotal(rt.metrics.delegationDepthExceeded)) >= 2 ? true : undefined))).toBe(true);
    // ...and the task still finishes: the top step hears back from both branches, from below the ceiling.
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("completed");
    const top = task.steps.find((s) => s.id === "s")!.output as { replies: string[] };
    expect(top.replies.map((r) => r.split(":")[0]).sort()).toEqual(["depth0-0", "depth0-1"]);

    const { rows: delegates } = await rt.pool.query<{ step_id: string; delegation: { queryDepth: number; originStepId: string } }>(
      "SELECT step_id, delegation FROM steps WHERE task_id = $1 AND kind = 'delegation'",
      [taskId],
    );
    expect(delegates).toHaveLength(18);
    const pastCeiling = delegates.filter((r) => r.delegation.queryDepth >= MAX_DELEGATION_DEPTH).map((r) => r.delegation.originStepId);
    expect(pastCeiling).toHaveLength(2);
    // No REPLY was delivered to an origin whose delegate was asked at the ceiling or beyond.
    const audit = await auditOf(rt.pool, taskId);
    const delivered = audit.filter((a) => a.action === "reply" && a.verdict !== "orphaned").map((a) => a.stepId);
    for (const origin of pastCeiling) expect(delivered).not.toContain(origin);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });
});

describe("fan-out caps with the default limits", () => {
  it("refuses 17 sub-queries at once: the step fails DELEGATION_LIMIT naming the numbers and the variable, not retried", async () => {
    await setUp();
    await submit(rt.pool, ORCHESTRATED);
    let asked = 0;
    workers.start("orch", askInWaves(17, 0, 0));
    workers.start("w", () => ++asked);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "orchestrated" });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("failed");
    expect(task.error).toMatchObject({ code: "DELEGATION_LIMIT", stepId: "orch" });
    expect(task.error!.message).toMatch(/\b17\b/);
    expect(task.error!.message).toMatch(/\b16\b/);
    expect(task.error!.message).toContain("SWITCHYARD_DELEGATION_MAX_OUTSTANDING");
    const orch = task.steps.find((s) => s.id === "orch")!;
    // retryable false: the step's two retries are not spent on asking the same thing again.
    expect(orch).toMatchObject({ status: "failed", attempts: 1, error: { code: "DELEGATION_LIMIT", retryable: false } });
    expect(task.steps.filter((s) => s.kind === "delegation")).toEqual([]);
    expect(asked).toBe(0);
    const audit = await auditOf(rt.pool, taskId);
    const denied = audit.filter((a) => a.action === "query");
    expect(denied.map((a) => `${a.stepId}:${a.verdict}:${a.rule}`)).toEqual(["orch:denied:builtin:delegation-limit"]);
    expect(rowsOf(audit, "sub_query")).toEqual([]);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("accepts 16 sub-queries at once and hands back all 16 replies", async () => {
    await setUp();
    await submit(rt.pool, ORCHESTRATED);
    workers.start("orch", askInWaves(16, 0, 0));
    workers.start("w", (work) => work.input);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "orchestrated" });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.find((s) => s.id === "orch")!.output).toEqual({ replies: 16 });
    expect(task.steps.filter((s) => s.kind === "delegation" && s.status === "completed")).toHaveLength(16);
    expect(rowsOf(await auditOf(rt.pool, taskId), "reply")).toEqual(Array(16).fill("orch:allow"));
  });
});

describe("fan-out caps set lower through the coordinator config", () => {
  it("counts every sub-query an attempt asks, also once the earlier ones answered", async () => {
    await setUp({ maxOutstandingSubQueries: 3, maxSubQueriesPerAttempt: 4 });
    await submit(rt.pool, ORCHESTRATED);
    // 3 asked (the outstanding cap), all three answered, then 2 more: 2 outstanding is fine, 5 in the attempt is not.
    workers.start("orch", askInWaves(3, 3, 2));
    workers.start("w", (work) => work.input);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "orchestrated" });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("failed");
    expect(task.error).toMatchObject({ code: "DELEGATION_LIMIT" });
    expect(task.error!.message).toMatch(/\b4\b/);
    expect(task.error!.message).toContain("SWITCHYARD_DELEGATION_MAX_PER_ATTEMPT");
    expect(task.steps.find((s) => s.id === "orch")).toMatchObject({ attempts: 1, error: { retryable: false } });
    expect(delegationSteps(task.steps).map((s) => `${s.id}:${s.status}`)).toEqual(["orch.d1:completed", "orch.d2:completed", "orch.d3:completed"]);
    const audit = await auditOf(rt.pool, taskId);
    expect(rowsOf(audit, "reply")).toEqual(["orch:allow", "orch:allow", "orch:allow"]);
    expect(audit.filter((a) => a.action === "query" && a.verdict === "denied").map((a) => a.rule)).toEqual(["builtin:delegation-limit"]);
  });

  it("caps what is outstanding at once: asking 3 more with 1 still out fails at a limit of 3", async () => {
    await setUp({ maxOutstandingSubQueries: 3, maxSubQueriesPerAttempt: 4 });
    await submit(rt.pool, ORCHESTRATED);
    workers.start("orch", askInWaves(2, 1, 3));
    workers.start("w", (work) => work.input);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "orchestrated" });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("failed");
    expect(task.error).toMatchObject({ code: "DELEGATION_LIMIT" });
    expect(task.error!.message).toMatch(/\b3\b/);
    expect(task.error!.message).toContain("SWITCHYARD_DELEGATION_MAX_OUTSTANDING");
    expect(delegationSteps(task.steps).map((s) => s.id)).toEqual(["orch.d1", "orch.d2"]);
  });
});
