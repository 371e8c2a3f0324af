/**
 * The example orchestrator (examples/handlers/orchestrator.ts) behind real harnesses and a real coordinator: it asks
 * the analyst, the critic and the foreign fact-checker in one turn, is resumed once per answer — failures included —
 * and finishes with what it gathered. Here A2A egress is off, so the fact-check is refused by the governor and comes
 * back as an error REPLY: the "one that fails" an orchestrator must live with.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import analyst from "../../examples/handlers/analyst.js";
import critic from "../../examples/handlers/critic.js";
import orchestrator, { type TurnNote } from "../../examples/handlers/orchestrator.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";

const ORG = "acme";

interface Gathered {
  topic: string;
  findings: string[];
  analysis: unknown;
  critique: unknown;
  factCheck: unknown;
  failed: Record<string, string>;
  turns: TurnNote[];
}

describe("example orchestrator", () => {
  let rt: TestRuntime;
  let workers: Workers;
  beforeEach(async () => {
    rt = await createTestRuntime({ coordinator: { defaultStepTimeoutMs: 10_000 } });
    workers = new Workers(rt);
    rt.startCoordinator();
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(`
name: gather
steps:
  - { id: gather, to: "role:orchestrator", cost_estimate: 1 }
`));
    workers.start("orchestrator", orchestrator);
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  it("is resumed once per answer, in the order the coordinator received them, and gathers what came back", async () => {
    workers.start("analyst", analyst);
    workers.start("critic", critic);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "gather", input: { topic: "tides" } });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status, JSON.stringify(task.error)).toBe("completed");

    const delegates = task.steps.filter((s) => s.kind === "delegation");
    const byDestination = Object.fromEntries(delegates.map((d) => [d.destination, d]));
    expect(Object.keys(byDestination).sort()).toEqual(["foreign:fact-checker", "role:analyst", "role:critic"]);
    const output = task.steps.find((s) => s.id === "gather")!.output as Gathered;
    // The answers, read through ctx.readResult, are the delegates' stored outputs.
    expect(output.analysis).toEqual(byDestination["role:analyst"]!.output);
    expect(output.critique).toEqual(byDestination["role:critic"]!.output);
    expect(output.factCheck).toBeNull();
    expect(output.failed["fact-check"]).toMatch(/^[A-Z_]+: /);
    expect(output.findings).toContain("open concern: who gains if tides is believed");

    // Three resumed turns, each handed a different answer once, with one fewer outstanding each time.
    expect(output.turns.map((t) => t.took).sort()).toEqual(["analysis", "critique", "fact-check"]);
    expect(output.turns.map((t) => t.outstanding.length)).toEqual([2, 1, 0]);
    output.turns.forEach((t, i) => expect(new Set(t.outstanding)).toEqual(new Set(output.turns.slice(i + 1).map((later) => later.took))));
    expect(new Set(output.turns.map((t) => t.turn)).size).toBe(3);
    expect(output.turns.map((t) => t.status)).toEqual(output.turns.map((t) => (t.took === "fact-check" ? "error" : "ok")));

    // The coordinator's records: one `query` row per sub-query, each its own governed hop, the foreign one denied
    // (egress is off for this tenant), and the answers handed over in the order their results were applied.
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.filter((a) => a.action === "query" && a.stepId === "gather" && a.rule === "builtin:query")).toHaveLength(3);
    expect(audit.filter((a) => a.action === "query" && a.stepId === "gather" && a.rule === "builtin:await_more")).toHaveLength(2);
    const factCheckStep = byDestination["foreign:fact-checker"]!.id;
    expect(audit.find((a) => a.stepId === factCheckStep && a.action === "a2a_egress")).toMatchObject({ verdict: "deny" });
    for (const role of ["role:analyst", "role:critic"]) {
      expect(audit.find((a) => a.stepId === byDestination[role]!.id && a.action === "sub_query")).toMatchObject({ verdict: "allow" });
    }
    // A delegate's answer is settled by its `result` row, or by the governor's deny that failed it before it was sent.
    const received = audit.filter((a) => (a.action === "result" || a.verdict === "deny") && delegates.some((d) => d.id === a.stepId)).map((a) => a.stepId);
    expect(output.turns.map((t) => t.from)).toEqual(received);
    expect(audit.filter((a) => a.action === "reply" && a.stepId === "gather")).toHaveLength(3);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("fails the step, naming every failure, when no specialist answered", async () => {
    workers.start("analyst", () => {
      throw new Error("analysis engine down");
    });
    workers.start("critic", () => {
      throw new Error("critic on leave");
    });
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(`
name: gather-once
steps:
  - { id: gather, to: "role:orchestrator", retries: 0 }
`));
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "gather-once", input: { topic: "tides" } });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("failed");
    expect(task.error!.message).toMatch(/no specialist answered: .*analysis engine down.*critic on leave|no specialist answered: .*critic on leave.*analysis engine down/);
  });
});
