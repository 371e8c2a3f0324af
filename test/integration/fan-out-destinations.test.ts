/**
 * Fan-out delegation (issue 14) to every destination kind: a real A2A agent on loopback (`foreign:KEY`, whose
 * sub-query resumes the origin when its bridge resolves) next to a role, and a team queue next to a role.
 */
import { afterEach, describe, expect, it } from "vitest";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { listBridges } from "../../src/store/bridges/postgres-bridge-store.js";
import type { Handler } from "../../src/harness/index.js";
import { startA2AAgent, type RunningA2AAgent } from "../support/a2a-agents.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../foreign/integration/support.js";
import { ORG, auditOf, expectSerial, expectStateCarried, inStartOrder, recordTurns, resultOrder, rowsOf, submit, type TurnRecord, delegationSteps } from "./fan-out-support.js";

/** Asks every destination in `to` at once; reads each answer as it comes; finishes with all of them. */
function askAll(to: Record<string, string>): Handler {
  return async (work, ctx) => {
    if (!work.resume) {
      return ctx.delegateAll(Object.entries(to).map(([id, destination]) => ({ to: destination, payload: { question: id }, correlationId: id })), { state: {} });
    }
    const { reply, state, outstanding } = work.resume;
    const answers = { ...(state as Record<string, unknown>), [reply.correlationId]: reply.status === "ok" ? await ctx.readResult(reply.resultRef) : reply.error };
    return outstanding.length > 0 ? ctx.awaitMore(answers) : answers;
  };
}

const ORCHESTRATED = `
name: orchestrated
steps:
  - { id: orch, to: "role:orch" }
`;

describe("fan-out to a foreign agent and a role", () => {
  let rt: ForeignTestRuntime;
  let workers: Workers;
  let helper: RunningA2AAgent | undefined;
  afterEach(async () => {
    await workers.stop();
    await helper?.close();
    await rt.cleanup();
  });

  it("resumes the origin once per reply: the role's as it comes, the agent's when its bridge resolves", async () => {
    rt = await createForeignRuntime();
    // Workers needs only the runtime parts a ForeignTestRuntime has too (bus, signer, config, pool, flags).
    workers = new Workers(rt as never);
    rt.startCoordinator();
    const agent = await startA2AAgent({ dialect: "1.0", behaviour: "slow", output: (input) => ({ answer: 42, asked: input }) });
    helper = agent;
    await rt.register(ORG, { agentKey: "helper", baseUrl: agent.baseUrl });
    await submit(rt.pool, ORCHESTRATED);
    const turns: TurnRecord[] = [];
    workers.start("orch", recordTurns(turns, askAll({ abroad: "foreign:helper", home: "role:local" })));
    workers.start("local", (work) => ({ local: work.input }));

    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "orchestrated" });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.find((s) => s.id === "orch")!.output).toEqual({
      abroad: { answer: 42, asked: { question: "abroad" } },
      home: { local: { question: "home" } },
    });
    expect(delegationSteps(task.steps).map((s) => `${s.id}:${s.destination}:${s.status}`)).toEqual([
      "orch.d1:foreign:helper:completed",
      "orch.d2:role:local:completed",
    ]);
    // The agent was asked once, with the sub-query's payload; its bridge resolved for the delegate step.
    expect(agent.received).toHaveLength(1);
    expect(agent.received[0]!.parts[0]).toEqual({ question: "abroad" });
    const bridges = await listBridges(rt.pool, ORG, taskId);
    expect(bridges.map((b) => `${b.stepId}:${b.status}`)).toEqual(["orch.d1:completed"]);

    const audit = await auditOf(rt.pool, taskId);
    const resumed = inStartOrder(turns).slice(1);
    expect(resumed.map((t) => t.reply!.correlationId)).toEqual(await resultOrder(rt.pool, taskId, audit));
    expect(resumed.map((t) => t.outstanding!.length)).toEqual([1, 0]);
    expectSerial(turns);
    expectStateCarried(turns);
    expect(rowsOf(audit, "a2a_egress")).toEqual(["orch.d1:allow"]);
    expect(rowsOf(audit, "sub_query")).toEqual(["orch.d2:allow"]);
    expect(rowsOf(audit, "reply")).toEqual(["orch:allow", "orch:allow"]);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });
});

describe("fan-out to a team and a role", () => {
  let rt: TestRuntime;
  let workers: Workers;
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  it("sends the team sub-query to the team queue and hands both replies back", async () => {
    rt = await createTestRuntime();
    workers = new Workers(rt);
    rt.startCoordinator();
    await submit(rt.pool, ORCHESTRATED);
    const turns: TurnRecord[] = [];
    workers.start("orch", recordTurns(turns, askAll({ team: "team:ops", role: "role:solo" })));
    workers.startTeam("ops", (work) => ({ ops: work.input, queue: "team:ops" }));
    workers.start("solo", (work) => ({ solo: work.input }));

    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "orchestrated" });
    const task = await waitForTask(rt.tasks, ORG, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.find((s) => s.id === "orch")!.output).toEqual({
      team: { ops: { question: "team" }, queue: "team:ops" },
      role: { solo: { question: "role" } },
    });
    expect(delegationSteps(task.steps).map((s) => `${s.id}:${s.destination}:${s.status}`)).toEqual([
      "orch.d1:team:ops:completed",
      "orch.d2:role:solo:completed",
    ]);
    expect(turns).toHaveLength(3);
    expectSerial(turns);
    const audit = await auditOf(rt.pool, taskId);
    expect(rowsOf(audit, "sub_query")).toEqual(["orch.d1:allow", "orch.d2:allow"]);
    // The team's result is signed by the team and recorded as its work.
    expect(audit.find((a) => a.action === "result" && a.stepId === "orch.d1")!.actor).toBe("worker:team:ops");
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });
});
