/**
 * Interop with an A2A server that is NOT built on `@a2a-js/sdk` (issue 10 §1, "two independent npm A2A servers"):
 * `@reactive-agents/a2a` 0.9.0 (Effect-based, own schemas and router; see reactive-agents-server.ts for how it is
 * hosted on Node). What it is: a v0.3 card served only at the legacy `/.well-known/agent.json`, no push, input
 * modes `text/plain` + `application/json` but a task handler that reads ONLY text parts, synchronous `message/send`
 * answering with the finished task (one artifact, one text part) — and every successful answer carries
 * `"id": null` instead of the request's id, which our client accepts as the answer to its one request
 * (src/foreign/a2a/null-id-answer.ts).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AgentCardCache } from "../../../src/foreign/a2a/agent-card.js";
import { foreignOutput } from "../../../src/foreign/a2a/artifacts.js";
import { createA2AClient } from "../../../src/foreign/a2a/client.js";
import { modesFor, skillOf } from "../../../src/foreign/a2a/message-parts.js";
import { createCliEnvironment, type CliEnvironment } from "../../cli/helpers.js";
import { startPushReceiver, type PushReceiver } from "../a2a/http-fixtures.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";
import { startReactiveAgent, type ReactiveAgent, type ReactiveAgentOptions } from "./reactive-agents-server.js";

const ORG = "acme";
const INPUT = { task: { topic: "tides" }, steps: {} };
const INPUT_TEXT = JSON.stringify(INPUT, null, 2);

const agents: ReactiveAgent[] = [];
async function agent(options: ReactiveAgentOptions = {}): Promise<ReactiveAgent> {
  const a = await startReactiveAgent(options);
  agents.push(a);
  return a;
}
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

describe("@reactive-agents/a2a 0.9.0 through our A2A client", () => {
  let receiver: PushReceiver;
  beforeAll(async () => {
    receiver = await startPushReceiver();
  });
  afterAll(() => receiver.close());

  const cardOf = (a: ReactiveAgent) => new AgentCardCache({ fetch: globalThis.fetch }).get(ORG, "reactive", { baseUrl: a.baseUrl, requireSkill: "echo", requirePush: false });

  async function send(a: ReactiveAgent) {
    const card = await cardOf(a);
    const client = createA2AClient({ fetch: globalThis.fetch });
    const inputModes = modesFor(card, skillOf(INPUT, ["echo"], card.skills));
    const sent = client.send({ card, protocol: card.protocol, message: { taskId: "t1", stepId: "b", orgId: ORG, clearanceFloor: 0, input: INPUT, inputModes }, push: { url: `${receiver.url}/p`, token: "tok" } });
    return { card, client, sent };
  }

  it("reads its card at the legacy path as a v0.3 agent without push, accepting text and JSON", async () => {
    const a = await agent();
    const card = await cardOf(a);
    expect(card).toMatchObject({ name: "reactive-echo", protocol: "0.3", pushNotifications: false, skills: ["echo"], defaultInputModes: ["text/plain", "application/json"] });
    expect(card.cardUrl).toBe(`${a.baseUrl}/.well-known/agent.json`);
  });

  it("as published: its `id: null` success answer is accepted as ours — the finished task comes back, its text artifact is the step output", async () => {
    const a = await agent();
    const { card, client, sent } = await send(a);
    const result = await sent;
    // Synchronous: message/send answers with the finished task and its artifact (the whole result, at once).
    expect(result).toMatchObject({ answer: "task", state: "completed", artifacts: [{ name: "response", parts: [`echo: ${INPUT_TEXT}`] }] });
    expect(foreignOutput(result.artifacts)).toBe(`echo: ${INPUT_TEXT}`);
    // Its executor got our text rendering, once.
    expect(a.inputs).toEqual([INPUT_TEXT]);
    const snapshot = await client.getTask({ card, protocol: card.protocol, foreignTaskId: result.foreignTaskId });
    expect(snapshot).toMatchObject({ foreignTaskId: result.foreignTaskId, state: "completed" });
    expect(a.calls).toEqual(["message/send", "tasks/get"]);
  });

  it("with that one field fixed (as the spec asks): the same", async () => {
    const a = await agent({ echoRequestId: true });
    const { card, client, sent } = await send(a);
    const result = await sent;
    expect(result.state).toBe("completed");
    expect(a.inputs).toEqual([INPUT_TEXT]);
    const snapshot = await client.getTask({ card, protocol: card.protocol, foreignTaskId: result.foreignTaskId });
    expect(snapshot).toMatchObject({ foreignTaskId: result.foreignTaskId, state: "completed", artifacts: [{ name: "response", parts: [`echo: ${INPUT_TEXT}`] }] });
    expect(foreignOutput(snapshot.artifacts)).toBe(`echo: ${INPUT_TEXT}`);
    expect(a.calls).toEqual(["message/send", "tasks/get"]);
  });
});

describe("@reactive-agents/a2a 0.9.0 registered with `switchyard foreign register`", () => {
  let env: CliEnvironment;
  beforeAll(async () => {
    env = await createCliEnvironment();
  });
  afterAll(async () => {
    await env.cleanup();
  });

  it("is checked and accepted as it is (no credential needed, results polled)", async () => {
    const a = await agent();
    const run = await env.run(["foreign", "register", "reactive", "--tenant", ORG, "--url", a.baseUrl, "--skill", "echo", "--json"], { env: { SWITCHYARD_EGRESS_ALLOWED_NETWORKS: "127.0.0.0/8" } });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/checked foreign:reactive: reactive-echo \(A2A 0\.3\), results by poll/);
    expect(run.stderr).toMatch(/offers no push notifications: results are polled/);
    expect(JSON.parse(run.last)).toMatchObject({ agentKey: "reactive", skills: ["echo"] });
  });
});

describe("a workflow step to @reactive-agents/a2a 0.9.0", () => {
  let rt: ForeignTestRuntime;
  beforeAll(async () => {
    rt = await createForeignRuntime();
    rt.startCoordinator();
  });
  afterAll(async () => {
    await rt.cleanup();
  });

  // The row's end-to-end proof: the UNMODIFIED server (v0.3 card at the legacy path, no push → polled, text-only,
  // `id: null` answers) serves a workflow step.
  it("as published: the step completes with the agent's text as its output; the work was done once", async () => {
    const a = await agent();
    await rt.register(ORG, { agentKey: "reactive", baseUrl: a.baseUrl });
    await rt.submit(ORG, `
name: interop
steps:
  - { id: b, to: "foreign:reactive", timeout: 10s }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "interop", input: INPUT.task });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("completed");
    expect(task.steps[0]!.output).toBe(`echo: ${INPUT_TEXT}`);
    expect(a.inputs).toEqual([INPUT_TEXT]);
    expect(a.calls.filter((m) => m === "message/send")).toHaveLength(1);
    // No push config was asked of an agent without push: the bridge was polled (or resolved by the answer itself).
    const bridge = await rt.pool.query<{ delivery: string; status: string }>("SELECT delivery, status FROM a2a_bridge WHERE task_id = $1", [taskId]);
    expect(bridge.rows).toEqual([{ delivery: "poll", status: "completed" }]);
  });
});
