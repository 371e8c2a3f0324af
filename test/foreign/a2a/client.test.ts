/**
 * The A2A client against real SDK agents of both dialects: the send is non-blocking, pushes really arrive at a local
 * receiver with the per-bridge token, every push body parses, the task completes and GetTask returns its artifacts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AgentCardCache, type ResolvedAgentCard } from "../../../src/foreign/a2a/agent-card.js";
import { foreignOutput, mergeArtifacts, type ForeignArtifact } from "../../../src/foreign/a2a/artifacts.js";
import { createA2AClient, type A2AClient } from "../../../src/foreign/a2a/client.js";
import { parsePushNotification, type ParsedPushNotification } from "../../../src/foreign/a2a/push-body.js";
import { ErrorCode, SwitchyardError } from "../../../src/errors.js";
import { startA2AAgent, type AgentDialect, type RunningA2AAgent, type StartA2AAgentOptions } from "../../support/a2a-agents.js";
import { deadUrl, startPushReceiver, startRawServer, type PushReceiver, type ReceivedPush } from "./http-fixtures.js";

interface SeenRequest {
  url: string;
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
}

/** Global fetch (tests only) that records what the client sends through it. */
function recordingFetch() {
  const seen: SeenRequest[] = [];
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const body = typeof init?.body === "string" ? (JSON.parse(init.body) as Record<string, unknown>) : undefined;
    seen.push({ url: String(input), headers, body });
    return fetch(input, init);
  };
  return { fetchImpl, seen };
}

async function failure(promise: Promise<unknown>): Promise<SwitchyardError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SwitchyardError);
  return error as SwitchyardError;
}

const parsePush = (push: ReceivedPush): ParsedPushNotification => parsePushNotification(push.contentType, push.body, { maxBytes: 1 << 20 });
const isFinal = (pushes: ReceivedPush[]) => pushes.some((push) => parsePush(push).final);

let receiver: PushReceiver;
beforeAll(async () => {
  receiver = await startPushReceiver();
});
afterAll(() => receiver.close());

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((close) => close()));
});

describe.each<AgentDialect>(["1.0", "0.3"])("against a v%s agent", (dialect) => {
  let seq = 0;
  const setup = async (options: Partial<StartA2AAgentOptions> = {}) => {
    const agent = await startA2AAgent({ dialect, skills: ["echo"], ...options });
    cleanups.push(() => agent.close());
    const { fetchImpl, seen } = recordingFetch();
    const cards = new AgentCardCache({ fetch: fetchImpl });
    const card = await cards.get("org-a", "echoer", { baseUrl: agent.baseUrl, requireSkill: "echo" });
    const client = createA2AClient({ fetch: fetchImpl, timeoutMs: 5_000 });
    seq += 1;
    const bridge = `bridge-${dialect}-${seq}`;
    const push = { url: `${receiver.url}/api/v1/a2a/callback/${bridge}?t=signed.${seq}`, token: `secret-${bridge}` };
    const pushesFor = (foreignTaskId: string) => receiver.pushes.filter((p) => p.path.endsWith(`/${bridge}`) && parsePush(p).foreignTaskId === foreignTaskId);
    return { agent, card, client, seen, push, bridge, pushesFor };
  };
  const message = (input: unknown) => ({ taskId: "task-1", stepId: "step-b", orgId: "org-a", clearanceFloor: 2, input });

  it("sends without blocking; pushes arrive with the token; the task completes; GetTask returns the artifacts", async () => {
    const { agent, card, client, seen, push, bridge, pushesFor } = await setup();
    expect(card.protocol).toBe(dialect);

    const sent = await client.send({ card, protocol: card.protocol, message: message({ question: "ping" }), push });
    expect(["submitted", "working"]).toContain(sent.state);
    expect(sent.foreignTaskId).toMatch(/^[0-9a-f-]{36}$/);

    // The wire: the dialect's method, header and non-blocking flag, through the injected fetch.
    const rpc = seen.find((r) => r.url === agent.rpcUrl)!;
    expect(rpc.headers["a2a-version"]).toBe(dialect);
    if (dialect === "1.0") {
      expect(rpc.body).toMatchObject({ method: "SendMessage", params: { configuration: { returnImmediately: true, taskPushNotificationConfig: { url: push.url, token: push.token } } } });
    } else {
      expect(rpc.body).toMatchObject({ method: "message/send", params: { configuration: { blocking: false, pushNotificationConfig: { url: push.url, token: push.token } } } });
    }

    // What the agent received: the input as a data part, our ids as metadata, the push config.
    expect(agent.received).toHaveLength(1);
    expect(agent.received[0]).toMatchObject({
      taskId: sent.foreignTaskId,
      a2aVersion: dialect,
      parts: [{ question: "ping" }],
      metadata: { switchyard: { taskId: "task-1", stepId: "step-b", tenant: "org-a", clearanceFloor: 2 } },
      pushConfig: { url: push.url, token: push.token },
    });

    // Pushes: several per task, each with the notification token, the signed URL intact, the dialect's body.
    await receiver.waitFor(() => isFinal(pushesFor(sent.foreignTaskId)));
    const pushes = pushesFor(sent.foreignTaskId);
    expect(pushes.length).toBeGreaterThanOrEqual(3);
    for (const p of pushes) {
      expect(p.headers["x-a2a-notification-token"]).toBe(push.token);
      expect(p.headers.authorization).toBeUndefined();
      expect(p.path).toBe(`/api/v1/a2a/callback/${bridge}`);
      expect(p.query.get("t")).toBe(`signed.${seq}`);
      expect(p.contentType).toBe(dialect === "1.0" ? "application/a2a+json" : "application/json");
    }
    const parsed = pushes.map(parsePush);
    expect(parsed.every((p) => p.dialect === dialect && p.foreignTaskId === sent.foreignTaskId)).toBe(true);
    const states = parsed.flatMap((p) => (p.state ? [p.state] : []));
    expect(states[0]).toBe("submitted");
    expect(states).toContain("working");
    expect(states.at(-1)).toBe("completed");
    expect(parsed.filter((p) => p.final)).toHaveLength(1);
    // What arrived is what the agent says it sent.
    expect(agent.pushes.filter((p) => p.taskId === sent.foreignTaskId)).toHaveLength(pushes.length);

    const collected = parsed.reduce<ForeignArtifact[]>((all, p) => mergeArtifacts(all, p.artifacts), []);
    const expected = { echo: { question: "ping" }, by: `test-agent-${dialect}-complete` };
    expect(foreignOutput(collected)).toEqual(expected);

    const snapshot = await client.getTask({ card, protocol: card.protocol, foreignTaskId: sent.foreignTaskId });
    expect(snapshot).toEqual({ foreignTaskId: sent.foreignTaskId, state: "completed", artifacts: [{ artifactId: "result", name: "result", parts: [expected] }] });
    // Everything went through the injected fetch: the card, the send, the lookup.
    expect(seen.map((r) => r.url)).toEqual([agent.cardUrl, agent.rpcUrl, agent.rpcUrl]);
  });

  it("asks for Authorization: Bearer when told to; the JS SDK then sends it instead of the token header", async () => {
    const { card, client, push, pushesFor } = await setup();
    const sent = await client.send({ card, protocol: card.protocol, message: message({ n: 1 }), push: { ...push, bearer: true } });
    await receiver.waitFor(() => isFinal(pushesFor(sent.foreignTaskId)));
    for (const p of pushesFor(sent.foreignTaskId)) {
      expect(p.headers.authorization).toBe(`Bearer ${push.token}`);
      expect(p.headers["x-a2a-notification-token"]).toBeUndefined();
    }
  });

  it("wraps a non-object input as { value } in the data part", async () => {
    const { agent, card, client, push } = await setup();
    await client.send({ card, protocol: card.protocol, message: message([1, "two"]), push });
    expect(agent.received[0]!.parts).toEqual([{ value: [1, "two"] }]);
  });

  it("reports a failing agent: the final push and GetTask say failed, with the agent's reason", async () => {
    const { card, client, push, pushesFor } = await setup({ behaviour: "fail" });
    const sent = await client.send({ card, protocol: card.protocol, message: message({}), push });
    await receiver.waitFor(() => isFinal(pushesFor(sent.foreignTaskId)));
    const final = pushesFor(sent.foreignTaskId).map(parsePush).find((p) => p.final)!;
    expect(final).toMatchObject({ state: "failed", message: "the test agent was told to fail" });
    const snapshot = await client.getTask({ card, protocol: card.protocol, foreignTaskId: sent.foreignTaskId });
    expect(snapshot).toMatchObject({ state: "failed", artifacts: [], message: "the test agent was told to fail" });
  });

  it("reports input-required as an interrupted, non-final state", async () => {
    const { card, client, push, pushesFor } = await setup({ behaviour: "input-required" });
    const sent = await client.send({ card, protocol: card.protocol, message: message({}), push });
    await receiver.waitFor(() => pushesFor(sent.foreignTaskId).some((p) => parsePush(p).state === "input_required"));
    expect(pushesFor(sent.foreignTaskId).map(parsePush).some((p) => p.final)).toBe(false);
    expect((await client.getTask({ card, protocol: card.protocol, foreignTaskId: sent.foreignTaskId })).state).toBe("input_required");
  });

  it("cancels a task that never finishes; a canceled push follows; a finished task is not cancelable", async () => {
    const { card, client, push, pushesFor } = await setup({ behaviour: "never-finish" });
    const sent = await client.send({ card, protocol: card.protocol, message: message({}), push });
    await receiver.waitFor(() => pushesFor(sent.foreignTaskId).some((p) => parsePush(p).state === "working"));
    const canceled = await client.cancelTask({ card, protocol: card.protocol, foreignTaskId: sent.foreignTaskId });
    expect(canceled).toMatchObject({ foreignTaskId: sent.foreignTaskId, state: "canceled" });
    await receiver.waitFor(() => pushesFor(sent.foreignTaskId).some((p) => parsePush(p).state === "canceled"));
    expect((await client.getTask({ card, protocol: card.protocol, foreignTaskId: sent.foreignTaskId })).state).toBe("canceled");

    const done = await setup();
    const finished = await done.client.send({ card: done.card, protocol: done.card.protocol, message: message({}), push: done.push });
    await receiver.waitFor(() => isFinal(done.pushesFor(finished.foreignTaskId)));
    const error = await failure(done.client.cancelTask({ card: done.card, protocol: done.card.protocol, foreignTaskId: finished.foreignTaskId }));
    expect(error.code).toBe(ErrorCode.FailedPrecondition);
    expect(error.details).toMatchObject({ reason: "A2A_NOT_CANCELABLE", retryable: false });
  });

  it("finds the result by GetTask when the agent never pushes", async () => {
    const { agent, card, client, push, pushesFor } = await setup({ behaviour: "no-push" });
    const sent = await client.send({ card, protocol: card.protocol, message: message({ x: 1 }), push });
    let snapshot = await client.getTask({ card, protocol: card.protocol, foreignTaskId: sent.foreignTaskId });
    for (let i = 0; i < 50 && snapshot.state !== "completed"; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      snapshot = await client.getTask({ card, protocol: card.protocol, foreignTaskId: sent.foreignTaskId });
    }
    expect(snapshot.state).toBe("completed");
    expect(foreignOutput(snapshot.artifacts)).toEqual({ echo: { x: 1 }, by: `test-agent-${dialect}-no-push` });
    expect(pushesFor(sent.foreignTaskId)).toHaveLength(0);
    expect(agent.pushes).toHaveLength(0);
  });

  it("answers NOT_FOUND (A2A_TASK_NOT_FOUND) for a task the agent does not know", async () => {
    const { card, client } = await setup();
    const error = await failure(client.getTask({ card, protocol: card.protocol, foreignTaskId: "no-such-task" }));
    expect(error.code).toBe(ErrorCode.NotFound);
    expect(error.details).toMatchObject({ reason: "A2A_TASK_NOT_FOUND", retryable: false });
  });

  it("is refused by the agent when speaking the other dialect (no silent fallback)", async () => {
    const { agent, client, push } = await setup();
    const other: AgentDialect = dialect === "1.0" ? "0.3" : "1.0";
    const target = { endpoints: { [other]: { url: agent.rpcUrl } } };
    const error = await failure(client.send({ card: target, protocol: other, message: message({}), push }));
    expect(error.code).toBe(ErrorCode.FailedPrecondition);
    // -32009: VersionNotSupported.
    expect(error.details).toMatchObject({ reason: "A2A_RPC_ERROR", rpcCode: -32009, retryable: false });
    expect(agent.received).toHaveLength(0);
  });
});

describe("client plumbing", () => {
  let agent: RunningA2AAgent;
  let card: ResolvedAgentCard;
  beforeAll(async () => {
    agent = await startA2AAgent({ dialect: "1.0" });
    card = await new AgentCardCache({ fetch }).get("org-a", "x", { baseUrl: agent.baseUrl });
  });
  afterAll(() => agent.close());
  const send = (client: A2AClient, signal?: AbortSignal) =>
    client.send({ card, protocol: "1.0", message: { taskId: "t", stepId: "s", orgId: "o", clearanceFloor: 0, input: {} }, push: { url: `${receiver.url}/cb`, token: "tok" }, signal });

  it("refuses a dialect the card has no endpoint for, before any request", async () => {
    let calls = 0;
    const client = createA2AClient({ fetch: (i, init) => ((calls += 1), fetch(i, init)) });
    const error = await failure(client.send({ card, protocol: "0.3", message: { taskId: "t", stepId: "s", orgId: "o", clearanceFloor: 0, input: {} }, push: { url: "http://x/cb", token: "t" } }));
    expect(error.details).toMatchObject({ reason: "CARD_NO_PROTOCOL", retryable: false });
    expect(calls).toBe(0);
  });

  it("passes a refusal of the injected (guarded) fetch through with its code and reason, not retryable", async () => {
    const refusal = new SwitchyardError(ErrorCode.PolicyDenied, "egress refused", { details: { reason: "EGRESS_HOST_NOT_ALLOWED" } });
    const client = createA2AClient({
      fetch: async () => {
        throw refusal;
      },
    });
    const error = await failure(send(client));
    expect(error.code).toBe(ErrorCode.PolicyDenied);
    expect(error.message).toBe("egress refused");
    expect(error.details).toEqual({ reason: "EGRESS_HOST_NOT_ALLOWED", retryable: false });
    expect(error.cause).toBe(refusal);
    const flagged = new SwitchyardError(ErrorCode.Unavailable, "connect timeout", { details: { retryable: true } });
    const passing = createA2AClient({
      fetch: async () => {
        throw flagged;
      },
    });
    expect(await failure(send(passing))).toBe(flagged);
  });

  it("stops when the caller's signal aborts (CANCELLED, not retryable)", async () => {
    const client = createA2AClient({ fetch });
    const error = await failure(send(client, AbortSignal.abort()));
    expect(error.code).toBe(ErrorCode.Cancelled);
  });

  /** A client pointed at a scripted server standing in for a broken agent. */
  const against = async (respond: Parameters<typeof startRawServer>[0], timeoutMs = 5_000) => {
    const server = await startRawServer(respond);
    cleanups.push(() => server.close());
    const target = { endpoints: { "1.0": { url: `${server.url}/rpc` } } };
    return { client: createA2AClient({ fetch, timeoutMs }), target };
  };
  const rpcResult = (result: unknown) => (_req: unknown, res: import("node:http").ServerResponse, body: string) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", id: (JSON.parse(body) as { id: number }).id, result }));
  };
  const stepMessage = { taskId: "t", stepId: "s", orgId: "o", clearanceFloor: 0, input: {} };
  const pushTo = { url: "http://127.0.0.1:1/cb", token: "tok" };

  it("maps an unreachable agent to UNAVAILABLE (A2A_NETWORK, retryable)", async () => {
    const client = createA2AClient({ fetch });
    const error = await failure(client.send({ card: { endpoints: { "1.0": { url: `${await deadUrl()}/rpc` } } }, protocol: "1.0", message: stepMessage, push: pushTo }));
    expect(error.code).toBe(ErrorCode.Unavailable);
    expect(error.details).toMatchObject({ reason: "A2A_NETWORK", retryable: true });
  });

  it("maps a hanging agent to TIMEOUT (A2A_TIMEOUT, retryable)", async () => {
    const { client, target } = await against(() => {}, 150);
    const error = await failure(client.send({ card: target, protocol: "1.0", message: stepMessage, push: pushTo }));
    expect(error.code).toBe(ErrorCode.Timeout);
    expect(error.details).toMatchObject({ reason: "A2A_TIMEOUT", retryable: true });
  });

  it.each([
    [503, ErrorCode.Unavailable, true],
    [429, ErrorCode.Unavailable, true],
    [401, ErrorCode.FailedPrecondition, false],
  ])("maps HTTP %i to %s (retryable %s)", async (status, code, retryable) => {
    const { client, target } = await against((_req, res) => {
      res.writeHead(status, { "content-type": "text/plain" });
      res.end("no");
    });
    const error = await failure(client.send({ card: target, protocol: "1.0", message: stepMessage, push: pushTo }));
    expect(error.code).toBe(code);
    expect(error.details).toMatchObject({ reason: "A2A_HTTP_STATUS", status, retryable });
  });

  it("maps a JSON-RPC internal error to UNAVAILABLE (retryable)", async () => {
    const { client, target } = await against((_req, res, body) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: (JSON.parse(body) as { id: number }).id, error: { code: -32603, message: "boom" } }));
    });
    const error = await failure(client.send({ card: target, protocol: "1.0", message: stepMessage, push: pushTo }));
    expect(error.code).toBe(ErrorCode.Unavailable);
    expect(error.details).toMatchObject({ reason: "A2A_RPC_ERROR", rpcCode: -32603, retryable: true });
  });

  it("reads a Message answer as the completed result: its parts are the artifact `message`, its id the message's task or OUR message id", async () => {
    const bare = await against(rpcResult({ message: { messageId: "m", role: "ROLE_AGENT", parts: [{ text: "hi" }, { data: { n: 1 } }] } }));
    // The stand-in id is ours (the bridge id we send as messageId): agents may reuse their own message ids.
    expect(await bare.client.send({ card: bare.target, protocol: "1.0", message: { ...stepMessage, messageId: "bridge-1" }, push: pushTo })).toEqual({
      answer: "message",
      foreignTaskId: "message:bridge-1",
      agentMessageId: "m",
      state: "completed",
      artifacts: [{ artifactId: "message", parts: ["hi", { n: 1 }] }],
    });
    const inTask = await against(rpcResult({ message: { messageId: "m2", taskId: "t-9", role: "ROLE_AGENT", parts: [{ text: "done" }] } }));
    expect(await inTask.client.send({ card: inTask.target, protocol: "1.0", message: stepMessage })).toMatchObject({ answer: "message", foreignTaskId: "t-9", state: "completed" });
  });

  it("refuses unusable answers (A2A_BAD_RESPONSE): a task without an id, another task than asked, a body that is not JSON-RPC", async () => {
    const noId = await against(rpcResult({ task: { status: { state: "TASK_STATE_SUBMITTED" } } }));
    expect((await failure(noId.client.send({ card: noId.target, protocol: "1.0", message: stepMessage, push: pushTo }))).details).toMatchObject({
      reason: "A2A_BAD_RESPONSE",
      retryable: false,
    });
    const other = await against(rpcResult({ id: "someone-else", status: { state: "TASK_STATE_COMPLETED" } }));
    expect((await failure(other.client.getTask({ card: other.target, protocol: "1.0", foreignTaskId: "mine" }))).details).toMatchObject({
      reason: "A2A_BAD_RESPONSE",
      got: "someone-else",
    });
    const html = await against((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html></html>");
    });
    expect((await failure(html.client.getTask({ card: html.target, protocol: "1.0", foreignTaskId: "mine" }))).details.reason).toBe("A2A_BAD_RESPONSE");
  });
});
