/**
 * The inline release (issue 15, engine.ts `releaseInline`): a batch whose result frees a slot on a destination
 * with held steps lets the next held step go in the same transaction — no release loop runs here — and a release
 * that fails rolls back alone: the result that freed the slot still commits. The engine is driven directly, as a
 * coordinator's fenced view (this process owns every shard), on the real database.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { EngineInput, InlineRelease } from "../../src/coordinator/engine.js";
import { setLimit } from "../../src/fairness/limit-changes.js";
import { createPostgresLimitStore } from "../../src/store/limits/postgres-limit-store.js";
import { inlineRelease } from "../../src/fairness/releaser.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";

const ORG = "inline";
const WORKFLOW = `name: one\nsteps:\n  - { id: a, to: "role:slot", timeout: 120s }\n`;

describe("inline release: held steps go in the batch that frees a slot", () => {
  let rt: TestRuntime | undefined;
  afterEach(async () => {
    await rt?.cleanup();
    rt = undefined;
  });

  async function setUp(): Promise<{ first: string; held: string[] }> {
    rt = await createTestRuntime();
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(WORKFLOW));
    await setLimit(createPostgresLimitStore(), rt.pool, { orgId: "", destination: "role:slot", maxInFlight: 1, ratePerSec: null, burst: null, weight: null }, { actor: "test", reason: "one slot" });
    await rt.limits.refresh();
    const first = (await rt.tasks.start({ orgId: ORG, workflow: "one" })).taskId;
    const held = [(await rt.tasks.start({ orgId: ORG, workflow: "one" })).taskId, (await rt.tasks.start({ orgId: ORG, workflow: "one" })).taskId];
    return { first, held };
  }

  async function statusOf(taskId: string): Promise<string> {
    const { rows } = await rt!.pool.query<{ status: string }>("SELECT status FROM steps WHERE task_id = $1 AND step_id = 'a'", [taskId]);
    return rows[0]!.status;
  }

  function result(taskId: string): EngineInput {
    return {
      orgId: ORG,
      taskId,
      dedupe: true,
      event: { type: "result", eventId: `result:${taskId}:a:1`, stepId: "a", attempt: 1, sender: { kind: "queue", endpoint: "role:slot" }, ok: true, output: {}, error: null, cost: 0, payloadHash: "" },
    };
  }

  it("the result that frees the slot and the dispatch that takes it commit together, the oldest held step first", async () => {
    const { first, held } = await setUp();
    expect([await statusOf(first), await statusOf(held[0]!), await statusOf(held[1]!)]).toEqual(["dispatched", "held", "held"]);
    const engine = rt!.engine.fenced({ fence: async () => {} }, inlineRelease({ limits: rt!.limits, store: rt!.stores.heldSteps, serves: () => true, clock: Date.now }));
    const applied = await engine.apply(rt!.pool, [result(first)]);

    expect(await statusOf(first)).toBe("completed");
    expect([await statusOf(held[0]!), await statusOf(held[1]!)]).toEqual(["dispatched", "held"]);
    // Its WORK is in this batch's outbox, to publish with the result's acknowledgement.
    expect(applied.outbox.map((row) => row.stream)).toEqual(["role:slot"]);
    const { rows } = await rt!.pool.query<{ task_id: string; action: string }>(
      "SELECT task_id, action FROM audit_log WHERE org_id = $1 AND action IN ('dispatch', 'result') ORDER BY seq",
      [ORG],
    );
    // In the chain the result comes first: the slot was free when the held step took it.
    expect(rows).toEqual([
      { task_id: first, action: "dispatch" },
      { task_id: first, action: "result" },
      { task_id: held[0], action: "dispatch" },
    ]);
    expect((await verifyChain(rt!.stores.audit, rt!.pool, ORG)).ok).toBe(true);
  });

  it("a release that fails rolls back alone: the result still commits and the step stays held for the loop", async () => {
    const { first, held } = await setUp();
    const broken: InlineRelease = {
      async plan(client, destinations) {
        const planned = await inlineRelease({ limits: rt!.limits, store: rt!.stores.heldSteps, serves: () => true, clock: Date.now }).plan(client, destinations);
        // A statement Postgres refuses, as a poison held step might cause: the transaction is aborted, not just this call.
        await client.query("SELECT 1 / 0");
        return planned;
      },
    };
    const engine = rt!.engine.fenced({ fence: async () => {} }, broken);
    await engine.apply(rt!.pool, [result(first)]);

    expect(await statusOf(first)).toBe("completed");
    expect([await statusOf(held[0]!), await statusOf(held[1]!)]).toEqual(["held", "held"]);
    const { rows } = await rt!.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM held_steps WHERE org_id = $1", [ORG]);
    expect(rows[0]!.n).toBe(2);
    expect((await verifyChain(rt!.stores.audit, rt!.pool, ORG)).ok).toBe(true);
  });
});
