/**
 * FOREIGN end to end: workflow A (role, a real harness) → B (a real A2A agent, v1.0 or v0.3) → C (role), with the
 * push to our callback route resuming B; a missed push resumed by the sweep; a hung agent timed out; a card without
 * the skill failing closed; an approval parking the hop before anything is sent.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAudit } from "../../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../../src/governance/audit-verify.js";
import { listApprovals } from "../../../src/store/approvals/postgres-approval-store.js";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { disableForeignAgent } from "../../../src/foreign/registry.js";
import { setFlag } from "../../../src/flags/flag-changes.js";
import { createPostgresFlagStore } from "../../../src/store/flags/postgres-flag-store.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { waitFor } from "../../support/runtime.js";
import { Workers } from "../../support/workers.js";
import { createForeignRuntime, type ForeignTestRuntime } from "./support.js";

const ORG = "acme";

const ABC = `
name: abc
steps:
  - { id: a, to: "role:prep" }
  - { id: b, to: "foreign:helper", cost_estimate: 1 }
  - { id: c, to: "role:finish" }
`;

describe("FOREIGN hub and spoke", () => {
  let rt: ForeignTestRuntime;
  let workers: Workers;
  let agents: RunningA2AAgent[];
  let seenByC: unknown[];

  beforeEach(async () => {
    rt = await createForeignRuntime({ sweepAfterMs: 400 });
    workers = new Workers(rt as never);
    agents = [];
    seenByC = [];
    workers.start("prep", async (work) => ({ prepared: (work.input as { task: unknown }).task }));
    workers.start("finish", async (work) => {
      seenByC.push(work.input);
      return { done: true };
    });
    rt.startCoordinator();
  });
  afterEach(async () => {
    await workers.stop();
    await Promise.all(agents.map((a) => a.close()));
    await rt.cleanup();
  });

  async function agent(options: Parameters<typeof startA2AAgent>[0]): Promise<RunningA2AAgent> {
    const started = await startA2AAgent(options);
    agents.push(started);
    return started;
  }

  /** A one-step workflow whose foreign hop needs an approval, started. */
  async function startGatedTask(): Promise<{ helper: RunningA2AAgent; taskId: string }> {
    const helper = await agent({ dialect: "1.0" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl });
    await rt.submit(ORG, `
name: gated
steps:
  - { id: b, to: "foreign:helper", approval: true }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "gated", input: { q: 1 } });
    return { helper, taskId };
  }

  for (const dialect of ["1.0", "0.3"] as const) {
    it(`runs A → foreign B (v${dialect} agent) → C with one audit row per edge, resumed by the agent's push`, async () => {
      const helper = await agent({ dialect, name: `helper-${dialect}` });
      await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, costEstimate: 2 });
      await rt.submit(ORG, ABC);
      const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "abc", input: { topic: "tides" } });
      const task = await rt.finished(ORG, taskId);
      expect(task.status).toBe("completed");

      const expectedB = { echo: { task: { topic: "tides" }, steps: { a: { prepared: { topic: "tides" } } } }, by: `helper-${dialect}` };
      expect(task.steps.find((s) => s.id === "b")).toMatchObject({ status: "completed", attempts: 1, cost: 2, output: expectedB });
      // C's input carries B's output; nothing in B's output chose C.
      expect(seenByC).toEqual([{ task: { topic: "tides" }, steps: { b: expectedB } }]);

      // What the agent received: the step input as data, our ids as metadata, a push config pointing at our callback.
      expect(helper.received).toHaveLength(1);
      const received = helper.received[0]!;
      expect(received.a2aVersion).toBe(dialect === "1.0" ? "1.0" : "0.3");
      // The lab card accepts JSON and text: the data part first, then its text rendering (message-parts.ts).
      const sentInput = { task: { topic: "tides" }, steps: { a: { prepared: { topic: "tides" } } } };
      expect(received.parts).toEqual([sentInput, JSON.stringify(sentInput, null, 2)]);
      expect(received.metadata).toMatchObject({ switchyard: { taskId, stepId: "b", tenant: ORG } });
      const [bridge] = await listBridges(rt.pool, ORG, taskId);
      expect(received.pushConfig?.url).toMatch(new RegExp(`^${rt.publicUrl}/api/v1/a2a/callback/${bridge!.id}\\?t=`));
      expect(bridge).toMatchObject({ status: "completed", dialect, foreignTaskId: received.taskId, stepId: "b", attempt: 1 });
      expect(helper.pushes.length).toBeGreaterThanOrEqual(2);

      const audit = await listAudit(rt.pool, ORG, { taskId });
      expect(audit.map((a) => `${a.action}:${a.stepId}:${a.verdict}:${a.actor}`)).toEqual([
        "dispatch:a:allow:coordinator",
        "result:a:accepted:worker:role:prep",
        "a2a_egress:b:allow:coordinator",
        "result:b:accepted:foreign:helper",
        "dispatch:c:allow:coordinator",
        "result:c:accepted:worker:role:finish",
      ]);
      expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
    });
  }

  it("resumes a step whose agent never pushes through the sweep's GetTask", async () => {
    const helper = await agent({ dialect: "1.0", behaviour: "no-push" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl });
    await rt.submit(ORG, ABC);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "abc", input: { n: 1 } });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("completed");
    expect(helper.pushes).toHaveLength(0);
    expect(task.steps.find((s) => s.id === "b")!.output).toMatchObject({ echo: { task: { n: 1 } } });
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.filter((a) => a.stepId === "b").map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "result:accepted"]);
    expect((await listBridges(rt.pool, ORG, taskId))[0]).toMatchObject({ status: "completed", lastState: "completed" });
  });

  it("times out an agent that never finishes: audited timeout, step failed closed, bridge closed and cancelled", async () => {
    const helper = await agent({ dialect: "1.0", behaviour: "never-finish" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl });
    await rt.submit(ORG, `
name: hung
steps:
  - { id: b, to: "foreign:helper", timeout: 1s }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "hung" });
    const task = await rt.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "failed", error: { code: "TIMEOUT" } });
    const audit = (await listAudit(rt.pool, ORG, { taskId })).filter((a) => a.action !== "foreign_cancel");
    expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "timeout:failed"]);
    const bridge = await waitFor(async () => {
      const [b] = await listBridges(rt.pool, ORG, taskId);
      return b?.status === "timed_out" ? b : undefined;
    });
    expect(bridge.resolvedAt).not.toBeNull();
    // CancelTask reached the agent: it reports the task canceled (a late push that changes nothing).
    await waitFor(async () => helper.pushes.some((p) => JSON.stringify(p.body).includes("CANCELED")), { what: "the agent to cancel" });
    const rows = await waitFor(async () => {
      const all = await listAudit(rt.pool, ORG, { taskId });
      return all.length === 3 ? all : undefined;
    }, { what: "the CancelTask to be audited" });
    expect(rows.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "timeout:failed", "foreign_cancel:sent"]);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("fails the step closed, audited, when the agent's card lacks the skill; nothing is sent", async () => {
    const helper = await agent({ dialect: "1.0", skills: ["echo"] });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, skills: ["translate"] });
    await rt.submit(ORG, ABC);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "abc" });
    const task = await rt.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "failed", error: { code: "FOREIGN_SEND_FAILED", stepId: "b" } });
    expect(helper.received).toHaveLength(0);
    const rows = (await listAudit(rt.pool, ORG, { taskId })).filter((a) => a.stepId === "b");
    expect(rows.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:allow", "result:failed"]);
    expect(rows[1]!.reason).toMatch(/CARD_MISSING_SKILL/);
    expect(rows[1]!.reason).toMatch(/translate/);
    expect((await listBridges(rt.pool, ORG, taskId))[0]).toMatchObject({ status: "send_failed" });
  });

  it("fails the hop closed when the agent is not registered, disabled, or below the hop's clearance", async () => {
    await rt.submit(ORG, `
name: nobody
steps:
  - { id: b, to: "foreign:ghost" }
`);
    const ghost = await rt.tasks.start({ orgId: ORG, workflow: "nobody" });
    const t1 = await rt.finished(ORG, ghost.taskId);
    expect(t1.error).toMatchObject({ code: "FOREIGN_UNAVAILABLE" });
    expect(t1.error!.message).toMatch(/agent ghost is not registered/);

    const helper = await agent({ dialect: "1.0" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl, clearanceCeiling: 1 });
    await rt.submit(ORG, `
name: secret
steps:
  - { id: b, to: "foreign:helper", clearance: 2 }
`);
    const secret = await rt.tasks.start({ orgId: ORG, workflow: "secret" });
    const t2 = await rt.finished(ORG, secret.taskId);
    expect(t2.error).toMatchObject({ code: "CLEARANCE_DENIED" });
    expect(helper.received).toHaveLength(0);
    expect(await listBridges(rt.pool, ORG, secret.taskId)).toEqual([]);

    await disableForeignAgent(rt.stores.foreignAgents, rt.pool, ORG, "helper");
    await rt.submit(ORG, `
name: off
steps:
  - { id: b, to: "foreign:helper" }
`);
    const off = await rt.tasks.start({ orgId: ORG, workflow: "off" });
    const t3 = await rt.finished(ORG, off.taskId);
    expect(t3.error).toMatchObject({ code: "FOREIGN_UNAVAILABLE" });
    expect(t3.error!.message).toMatch(/agent helper is not enabled/);
    expect(helper.received).toHaveLength(0);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("lets a worker delegate to foreign:KEY: the REPLY arrives when the bridge resolves", async () => {
    const helper = await agent({ dialect: "1.0", output: (input) => ({ answer: 42, asked: input }) });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl });
    workers.start("asker", async (work, ctx) => {
      if (!work.resume) return ctx.delegate("foreign:helper", { question: "meaning" }, { state: { asked: true } });
      const reply = work.resume.reply;
      return { status: reply.status, answer: reply.status === "ok" ? await ctx.readResult(reply.resultRef) : null, state: work.resume.state };
    });
    await rt.submit(ORG, `
name: ask
steps:
  - { id: ask, to: "role:asker" }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "ask" });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps.find((s) => s.id === "ask")!.output).toEqual({ status: "ok", answer: { answer: 42, asked: { question: "meaning" } }, state: { asked: true } });
    expect(task.steps.find((s) => s.id === "ask.d1")).toMatchObject({ kind: "delegation", destination: "foreign:helper", status: "completed" });
    expect(helper.received[0]!.parts).toEqual([{ question: "meaning" }, JSON.stringify({ question: "meaning" }, null, 2)]);
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.map((a) => `${a.action}:${a.stepId}:${a.verdict}`)).toEqual([
      "dispatch:ask:allow", "query:ask:accepted", "a2a_egress:ask.d1:allow", "result:ask.d1:accepted", "reply:ask:allow", "result:ask:accepted",
    ]);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("parks the hop for approval before any byte leaves, then completes once approved", async () => {
    const { helper, taskId } = await startGatedTask();
    const parked = await waitFor(async () => {
      const t = await rt.tasks.get(ORG, taskId);
      return t.status === "parked" ? t : undefined;
    });
    expect(parked.steps[0]).toMatchObject({ status: "parked" });
    // Give a sender every chance to (wrongly) send.
    await new Promise((r) => setTimeout(r, 500));
    expect(helper.received).toHaveLength(0);
    expect(helper.cardRequests()).toBe(0);
    expect(await listBridges(rt.pool, ORG, taskId)).toEqual([]);

    const [approval] = await listApprovals(rt.pool, ORG, { status: "pending" });
    expect(approval).toMatchObject({ action: "a2a_egress", destination: "foreign:helper" });
    await rt.tasks.decideApproval({ orgId: ORG, approvalId: approval!.id, approve: true, actor: "user:ann" });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("completed");
    expect(helper.received).toHaveLength(1);
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:requires_approval", "approval:approved", "a2a_egress:allow", "result:accepted"]);
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  });

  it("an approval given after egress was switched off sends nothing: the hop fails closed", async () => {
    const { helper, taskId } = await startGatedTask();
    await waitFor(async () => ((await rt.tasks.get(ORG, taskId)).status === "parked" ? true : undefined));
    await setFlag(createPostgresFlagStore(), rt.pool, { name: "A2A_EGRESS_ENABLED", scopeKind: "tenant", scope: ORG, enabled: false, actor: "sre:test", reason: "incident" });
    await rt.flags.refresh();
    const [approval] = await listApprovals(rt.pool, ORG, { status: "pending" });
    await rt.tasks.decideApproval({ orgId: ORG, approvalId: approval!.id, approve: true, actor: "user:ann" });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("failed");
    expect(task.error!.message).toContain("builtin:egress-disabled");
    await new Promise((r) => setTimeout(r, 300));
    expect(helper.received).toHaveLength(0);
    expect(helper.cardRequests()).toBe(0);
    const audit = await listAudit(rt.pool, ORG, { taskId });
    expect(audit.map((a) => `${a.action}:${a.verdict}`)).toEqual(["a2a_egress:requires_approval", "approval:approved", "a2a_egress:deny"]);
  });
});
