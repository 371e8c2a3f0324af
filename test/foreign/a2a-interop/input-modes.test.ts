/**
 * Input modes against real SDK agents (issue 10 §1, "skill/agent accepts text only"): a text-only agent gets ONE
 * text part — a string input as is, an object's `text` field, otherwise the JSON rendered as text — a JSON-only agent
 * still gets one data part, and one accepting both gets the data part then the text rendering; a skill's own inputModes win over the card's defaults. Then end to end through a
 * workflow, including the output shape of an artifact made of several text parts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Part } from "@a2a-js/sdk";
import { AgentCardCache } from "../../../src/foreign/a2a/agent-card.js";
import { createA2AClient } from "../../../src/foreign/a2a/client.js";
import { modesFor, skillOf } from "../../../src/foreign/a2a/message-parts.js";
import { startA2AAgent, type AgentDialect, type RunningA2AAgent, type StartA2AAgentOptions } from "../../support/a2a-agents.js";
import { waitFor } from "../../support/runtime.js";
import { startPushReceiver, type PushReceiver } from "../a2a/http-fixtures.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../integration/support.js";

const ORG = "acme";
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((close) => close()));
});

describe.each<AgentDialect>(["1.0", "0.3"])("what a v%s agent receives", (dialect) => {
  let receiver: PushReceiver;
  beforeAll(async () => {
    receiver = await startPushReceiver();
  });
  afterAll(() => receiver.close());

  /** Sends `input` the way the transport does (modes from the card and the skill used) and returns the parts received. */
  async function received(options: Partial<StartA2AAgentOptions>, input: unknown, registrySkills: string[] = ["echo"]): Promise<unknown[]> {
    const agent = await startA2AAgent({ dialect, skills: ["echo", "translate"], ...options });
    cleanups.push(() => agent.close());
    const cards = new AgentCardCache({ fetch: globalThis.fetch });
    const card = await cards.get(ORG, "helper", { baseUrl: agent.baseUrl, requirePush: false });
    const client = createA2AClient({ fetch: globalThis.fetch });
    await client.send({
      card,
      protocol: card.protocol,
      message: { taskId: "t", stepId: "s", orgId: ORG, clearanceFloor: 0, input, inputModes: modesFor(card, skillOf(input, registrySkills, card.skills)) },
      push: { url: `${receiver.url}/push`, token: "tok" },
    });
    await waitFor(async () => agent.received.length > 0, { what: "the agent to receive the message" });
    return agent.received[0]!.parts;
  }

  const TEXT_ONLY = { inputModes: ["text/plain"] };

  it("text-only agent: a string input arrives as one text part, as is", async () => {
    expect(await received(TEXT_ONLY, "Bonjour, monde")).toEqual(["Bonjour, monde"]);
  });

  it("text-only agent: an object's `text` field is the text", async () => {
    expect(await received(TEXT_ONLY, { text: "translate me", lang: "fr" })).toEqual(["translate me"]);
  });

  it("text-only agent: any other object arrives as its JSON rendered as text", async () => {
    const input = { task: { topic: "tides" }, steps: {} };
    const parts = await received(TEXT_ONLY, input);
    expect(parts).toEqual([JSON.stringify(input, null, 2)]);
    expect(typeof parts[0]).toBe("string");
  });

  it("JSON-only agent: one data part, as before", async () => {
    expect(await received({ inputModes: ["application/json"] }, { q: 1 })).toEqual([{ q: 1 }]);
    expect(await received({ inputModes: ["application/json"] }, "s")).toEqual([{ value: "s" }]);
  });

  it("JSON and text accepted (the lab default): the data part first, then the text rendering", async () => {
    expect(await received({}, { q: 1 })).toEqual([{ q: 1 }, '{\n  "q": 1\n}']);
    expect(await received({}, { text: "hi", q: 1 })).toEqual([{ text: "hi", q: 1 }, "hi"]);
  });

  it("no input modes on the card: one data part (today's behaviour)", async () => {
    expect(await received({ inputModes: [] }, { q: 2 })).toEqual([{ q: 2 }]);
  });

  it("pre-0.3 bare kinds: a card listing only `text` gets a text part", async () => {
    expect(await received({ inputModes: ["text"] }, "plain")).toEqual(["plain"]);
  });

  if (dialect === "1.0") {
    it("the skill used decides: the input's `skill` names a text-only skill of a JSON agent", async () => {
      const options = { skillInputModes: { translate: ["text/plain"] } };
      expect(await received(options, { skill: "translate", text: "hola" })).toEqual(["hola"]);
    });

    it("without a named skill, the registry's first skill's modes apply", async () => {
      const options = { inputModes: ["text/plain"], skillInputModes: { echo: ["application/json"] } };
      expect(await received(options, { q: 3 }, ["echo"])).toEqual([{ q: 3 }]);
    });
  }
});

describe("through a workflow", () => {
  let rt: ForeignTestRuntime;
  let agents: RunningA2AAgent[];

  beforeAll(async () => {
    rt = await createForeignRuntime();
    rt.startCoordinator();
  });
  afterAll(async () => {
    await rt.cleanup();
  });
  afterEach(async () => {
    await Promise.all(agents.map((a) => a.close()));
  });

  let n = 0;
  async function run(options: Partial<StartA2AAgentOptions>, input: unknown) {
    const agent = await startA2AAgent({ dialect: "1.0", ...options });
    agents = [agent];
    const key = `agent${++n}`;
    await rt.register(ORG, { agentKey: key, baseUrl: agent.baseUrl });
    await rt.submit(ORG, `
name: wf${n}
steps:
  - { id: b, to: "foreign:${key}" }
`);
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: `wf${n}`, input });
    const task = await rt.finished(ORG, taskId);
    return { agent, task };
  }

  const text = (value: string): Part => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "text/plain" });

  it("a text-only agent gets the step input as JSON text, and its text artifact (several parts) is ONE string output", async () => {
    const { agent, task } = await run(
      { inputModes: ["text/plain"], outputParts: (input) => [text("Summary: "), text(`got ${String(input).length} chars`)] },
      { topic: "tides" },
    );
    const sent = JSON.stringify({ task: { topic: "tides" }, steps: {} }, null, 2);
    expect(agent.received[0]!.parts).toEqual([sent]);
    expect(task.status).toBe("completed");
    expect(task.steps[0]!.output).toBe(`Summary: got ${sent.length} chars`);
  });

  it("an artifact with text and data parts: { artifacts: [{ parts: [joined text, data] }] }", async () => {
    const data: Part = { content: { $case: "data", value: { score: 7 } }, metadata: undefined, filename: "", mediaType: "application/json" };
    const { task } = await run({ outputParts: () => [text("a"), data, text("b")] }, { q: 1 });
    expect(task.steps[0]!.output).toEqual({ artifacts: [{ artifactId: "result", name: "result", parts: ["ab", { score: 7 }] }] });
  });

  it("a JSON agent's single data part stays the output as is", async () => {
    const { agent, task } = await run({ inputModes: ["application/json"] }, { q: 1 });
    expect(agent.received[0]!.parts).toEqual([{ task: { q: 1 }, steps: {} }]);
    expect(task.steps[0]!.output).toMatchObject({ echo: { task: { q: 1 }, steps: {} } });
  });
});
