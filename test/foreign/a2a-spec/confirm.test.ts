/**
 * A `completed` status push whose artifacts are not known for sure is confirmed with GetTask — and when the agent
 * cannot answer it (here: it is gone), the bridge still resolves, with what the pushes collected, after a bounded
 * number of tries. The agent never pushes by itself (`no-push`), so every push here is ours; the sweep waits a
 * minute, so only the poller can resolve these bridges.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listBridges } from "../../../src/store/bridges/postgres-bridge-store.js";
import { CONFIRM_TRIES } from "../../../src/foreign/poller.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { waitFor } from "../../support/runtime.js";
import { createForeignRuntime, postPush, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";
const completed = (id: string) => ({ statusUpdate: { taskId: id, contextId: "ctx", status: { state: "TASK_STATE_COMPLETED" } } });
const chunk = (id: string, value: unknown, append: boolean) => ({ artifactUpdate: { taskId: id, contextId: "ctx", append, artifact: { artifactId: "r", parts: [{ data: value }] } } });

describe("confirming a completed push with GetTask", () => {
  let rt: ForeignTestRuntime;
  let agent: RunningA2AAgent;

  beforeEach(async () => {
    rt = await createForeignRuntime();
    agent = await startA2AAgent({ dialect: "1.0", behaviour: "no-push", name: "quiet" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: agent.baseUrl });
    await rt.submit(ORG, `
name: one
steps:
  - { id: b, to: "foreign:helper", timeout: 8s }
`);
    rt.startCoordinator();
  });
  afterEach(async () => {
    await agent.close();
    await rt.cleanup();
  });

  async function opened() {
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one", input: { q: 1 } });
    await waitFor(async () => ((await listBridges(rt.pool, ORG, taskId))[0]?.status === "dispatched" ? true : undefined));
    const received = agent.received[0]!;
    return { taskId, url: received.pushConfig!.url, header: { "x-a2a-notification-token": received.pushConfig!.token }, foreignTaskId: received.taskId };
  }

  it("a completed push with no artifact collected waits for GetTask, which brings the agent's real artifact", async () => {
    const h = await opened();
    // Let the agent finish its task (it pushes nothing), then tell us only that it completed.
    await new Promise((r) => setTimeout(r, 300));
    const answer = await postPush(h.url, completed(h.foreignTaskId), h.header);
    expect(answer.text).toContain("updated");
    const task = await rt.finished(ORG, h.taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ output: { echo: { task: { q: 1 }, steps: {} }, by: "quiet" } }] });
    expect(agent.calls).toContain(`getTask:${h.foreignTaskId}`);
  });

  it(`an agent that cannot answer GetTask: resolved after ${CONFIRM_TRIES} tries with the chunks pushed`, async () => {
    const h = await opened();
    expect((await postPush(h.url, chunk(h.foreignTaskId, { part: 1 }, false), h.header)).status).toBe(200);
    expect((await postPush(h.url, chunk(h.foreignTaskId, { part: 2 }, true), h.header)).status).toBe(200);
    await agent.close();
    expect((await postPush(h.url, completed(h.foreignTaskId), h.header)).text).toContain("updated");
    const [waiting] = await listBridges(rt.pool, ORG, h.taskId);
    expect(waiting).toMatchObject({ status: "dispatched", lastState: "completed" });
    const task = await rt.finished(ORG, h.taskId);
    expect(task).toMatchObject({ status: "completed", steps: [{ output: { artifacts: [{ artifactId: "r", parts: [{ part: 1 }, { part: 2 }] }] } }] });
    const [bridge] = await listBridges(rt.pool, ORG, h.taskId);
    expect(bridge).toMatchObject({ status: "completed", polls: CONFIRM_TRIES, nextPollAt: null });
    expect(await rt.metrics.registry.getSingleMetricAsString("switchyard_a2a_polls_total")).toMatch(/result="gave_up"} 1$/m);
  });
});
