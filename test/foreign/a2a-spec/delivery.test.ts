/**
 * Push or poll, and when a foreign task is done — against real SDK agents. The sweep waits a minute here and the
 * steps time out in a few seconds, so what resumes a step is the push, the answer or the poller, never the sweep:
 * - pushes in the wrong order (final status before the artifact; append chunks crossing) still give the whole
 *   output, confirmed with GetTask;
 * - an agent whose card offers no push, or one registered `delivery: poll`, is polled and completes, and is sent no
 *   push config;
 * - an artifact pushed after the bridge resolved is kept in `late_artifacts` and counted;
 * - a polled agent that never finishes times the step out (nothing stranded, polling stops).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { waitFor } from "../../support/runtime.js";
import { createForeignRuntime, postPush, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";

describe("A2A push or poll", () => {
  let rt: ForeignTestRuntime;
  let agents: RunningA2AAgent[];

  beforeEach(async () => {
    rt = await createForeignRuntime();
    agents = [];
    rt.startCoordinator();
  });
  afterEach(async () => {
    await Promise.all(agents.map((a) => a.close()));
    await rt.cleanup();
  });

  async function start(options: Parameters<typeof startA2AAgent>[0], registry: { delivery?: "auto" | "push" | "poll" } = {}, timeout = "4s") {
    const agent = await startA2AAgent(options);
    agents.push(agent);
    await rt.register(ORG, { agentKey: "helper", baseUrl: agent.baseUrl, ...registry });
    await rt.submit(ORG, `
name: one
steps:
  - { id: b, to: "foreign:helper", timeout: ${timeout} }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one", input: { q: 1 } });
    return { agent, taskId };
  }

  const echo = (by: string) => ({ echo: { task: { q: 1 }, steps: {} }, by });

  for (const dialect of ["1.0", "0.3"] as const) {
    it(`v${dialect}: the final status pushed before the artifact still completes with the artifact`, async () => {
      const { agent, taskId } = await start({ dialect, behaviour: "reordered-pushes", name: "reorderer" });
      const task = await rt.finished(ORG, taskId);
      expect(task).toMatchObject({ status: "completed", steps: [{ output: echo("reorderer") }] });
      const [bridge] = await listBridges(rt.pool, ORG, taskId);
      expect(bridge).toMatchObject({ status: "completed", delivery: "push", nextPollAt: null });
      // The agent really pushed the end first: v1.0 a status update then the artifact update; v0.3 the completed Task
      // snapshot (which carries the artifact) then the held-back snapshot of the artifact event (still working).
      await waitFor(async () => (agent.pushes.length >= 4 ? true : undefined));
      if (dialect === "1.0") {
        const order = agent.pushes.map((p) => Object.keys(p.body)[0]);
        expect(order.indexOf("artifactUpdate")).toBeGreaterThan(order.lastIndexOf("statusUpdate"));
        // A v1.0 status push carries no artifacts: the end was confirmed with GetTask.
        expect(agent.calls).toContain(`getTask:${bridge!.foreignTaskId}`);
      } else {
        const states = agent.pushes.map((p) => (p.body.status as { state?: string }).state);
        expect(states.indexOf("completed")).toBeLessThan(states.length - 1);
        expect(states[states.length - 1]).toBe("working");
        // The snapshot was complete: no GetTask was needed.
        expect(agent.calls).toEqual([]);
      }
    });
  }

  it("v0.3: chunks whose Task-snapshot pushes cross arrive whole and in order (the final snapshot is complete)", async () => {
    const { agent, taskId } = await start({ dialect: "0.3", behaviour: "chunked-out-of-order" });
    const task = await rt.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ output: { artifacts: [{ artifactId: "result", name: "result", parts: [{ chunk: 1 }, { chunk: 2 }, { chunk: 3 }] }] } }] });
    expect(agent.calls).toEqual([]);
  });

  it("v1.0: an artifact in append chunks whose pushes cross arrives whole and in order", async () => {
    const { agent, taskId } = await start({ dialect: "1.0", behaviour: "chunked-out-of-order" });
    const task = await rt.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ output: { artifacts: [{ artifactId: "result", name: "result", parts: [{ chunk: 1 }, { chunk: 2 }, { chunk: 3 }] }] } }] });
    await waitFor(async () => (agent.pushes.length >= 6 ? true : undefined));
    // Chunk 2's push really was sent after chunk 3 and the final status.
    const chunks = agent.pushes.flatMap((p) => {
      const update = p.body.artifactUpdate as { artifact: { parts: Array<{ data: { chunk: number } }> } } | undefined;
      return update ? [update.artifact.parts[0]!.data.chunk] : [];
    });
    expect(chunks).toEqual([1, 3, 2]);
    const [bridge] = await listBridges(rt.pool, ORG, taskId);
    expect(agent.calls).toContain(`getTask:${bridge!.foreignTaskId}`);
    // The crossed chunk arrived after the resolution but told nothing new: not a late artifact.
    expect(bridge!.lateArtifacts).toEqual([]);
  });

  for (const dialect of ["1.0", "0.3"] as const) {
    it(`v${dialect}: an agent whose card offers no push is polled with GetTask and completes; no push config is sent`, async () => {
      const { agent, taskId } = await start({ dialect, push: false, behaviour: "slow", pushDelays: 150, name: "pollee" });
      const task = await rt.finished(ORG, taskId);
      expect(task).toMatchObject({ status: "completed", steps: [{ output: echo("pollee") }] });
      expect(agent.received[0]!.pushConfig).toBeUndefined();
      expect(agent.pushes).toEqual([]);
      const [bridge] = await listBridges(rt.pool, ORG, taskId);
      expect(bridge).toMatchObject({ status: "completed", delivery: "poll", nextPollAt: null });
      expect(bridge!.polls).toBeGreaterThan(0);
      expect(agent.calls.filter((c) => c === `getTask:${bridge!.foreignTaskId}`).length).toBe(bridge!.polls);
    });
  }

  it("delivery: poll forced on a push-capable agent: no push config sent, polled, completes", async () => {
    const { agent, taskId } = await start({ dialect: "1.0", behaviour: "slow", pushDelays: 100, name: "forced" }, { delivery: "poll" });
    const task = await rt.finished(ORG, taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ output: echo("forced") }] });
    expect(agent.received[0]!.pushConfig).toBeUndefined();
    expect(agent.pushes).toEqual([]);
    const [bridge] = await listBridges(rt.pool, ORG, taskId);
    expect(bridge).toMatchObject({ delivery: "poll", status: "completed" });
    expect(agent.calls.some((c) => c.startsWith("getTask:"))).toBe(true);
  });

  it("delivery: push forced on an agent without push fails closed with CARD_NO_PUSH; nothing is sent", async () => {
    const { agent, taskId } = await start({ dialect: "1.0", push: false }, { delivery: "push" });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("failed");
    expect(JSON.stringify(task.steps[0]!.error)).toMatch(/CARD_NO_PUSH/);
    expect(agent.received).toEqual([]);
  });

  it("an artifact pushed after the bridge resolved is kept in late_artifacts and counted, the output unchanged", async () => {
    const { agent, taskId } = await start({ dialect: "1.0", behaviour: "complete", name: "early" });
    const task = await rt.finished(ORG, taskId);
    expect(task.steps[0]!.output).toEqual(echo("early"));
    const { url, token } = agent.received[0]!.pushConfig!;
    const foreignTaskId = agent.received[0]!.taskId;
    const late = { artifactUpdate: { taskId: foreignTaskId, contextId: "ctx", artifact: { artifactId: "extra", parts: [{ data: { late: true } }] } } };
    const answer = await postPush(url, late, { "x-a2a-notification-token": token });
    expect(answer.status).toBe(200);
    expect(answer.text).toMatch(/late/);
    // Twice (a sender's retry) is recorded once; a push repeating the resolved artifact is no late artifact at all.
    await postPush(url, late, { "x-a2a-notification-token": token });
    const again = { artifactUpdate: { taskId: foreignTaskId, contextId: "ctx", artifact: { artifactId: "result", name: "result", parts: [{ data: echo("early") }] } } };
    expect((await postPush(url, again, { "x-a2a-notification-token": token })).text).toMatch(/already resolved/);
    const [bridge] = await listBridges(rt.pool, ORG, taskId);
    expect(bridge!.lateArtifacts).toEqual([{ artifactId: "extra", parts: [{ late: true }] }]);
    expect(bridge!.status).toBe("completed");
    expect((await rt.tasks.get(ORG, taskId)).steps[0]!.output).toEqual(echo("early"));
    expect(await rt.metrics.registry.getSingleMetricAsString("switchyard_a2a_late_artifacts_total")).toMatch(/switchyard_a2a_late_artifacts_total 1$/m);
  });

  it("a polled agent that never finishes: the step times out, the bridge closes and polling stops", async () => {
    const { agent, taskId } = await start({ dialect: "1.0", push: false, behaviour: "never-finish" }, {}, "1500ms");
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("failed");
    const [bridge] = await waitFor(async () => {
      const bridges = await listBridges(rt.pool, ORG, taskId);
      return bridges[0]?.status === "timed_out" ? bridges : undefined;
    });
    expect(bridge).toMatchObject({ delivery: "poll", nextPollAt: null });
    const polls = agent.calls.filter((c) => c.startsWith("getTask:")).length;
    expect(polls).toBeGreaterThan(1);
    // Backoff: far fewer polls than one per poller tick over the 1.5 s.
    expect(polls).toBeLessThan(12);
    await new Promise((r) => setTimeout(r, 800));
    expect(agent.calls.filter((c) => c.startsWith("getTask:")).length).toBe(polls);
  });
});
