/**
 * The MCP transport against a real MCP server on loopback, without a workflow: `describe` (the registered tool must
 * be listed), result mapping (structured content, content items, isError, usage in `_meta`), argument wrapping, and
 * what `send` reports when the server is unreachable (not started, nothing may have reached it).
 */
import { createServer, type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { defaultConfig } from "../../../src/config/index.js";
import { SwitchyardError } from "../../../src/errors.js";
import { AgentChannels } from "../../../src/foreign/agent-channels.js";
import type { BridgeRecord } from "../../../src/store/bridges/bridge-store.js";
import { argumentsOf, McpTransport } from "../../../src/foreign/mcp/mcp-transport.js";
import { observationOf, usageOf } from "../../../src/foreign/mcp/tool-result.js";
import type { ForeignAgentRecord } from "../../../src/foreign/registry.js";
import type { TransportSendRequest } from "../../../src/foreign/transport.js";
import { failedBeforeSending } from "../../../src/foreign/send-reach.js";
import { createServer as createHttpServer } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startMcpServer, type RunningMcpServer } from "../../support/mcp-server.js";

/** A low-level MCP server whose tools/list answers one tool per page (cursor = the next index). */
async function startPagingServer(names: string[]): Promise<{ url: string; pages: number; close(): Promise<void> }> {
  const state = { pages: 0 };
  const http = createHttpServer((req, res) => {
    if (req.method !== "POST") return void res.writeHead(405).end();
    const server = new Server({ name: "pager", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async (request) => {
      state.pages++;
      const i = Number(request.params?.cursor ?? 0);
      return { tools: [{ name: names[i]!, inputSchema: { type: "object" as const } }], ...(i + 1 < names.length ? { nextCursor: String(i + 1) } : {}) };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => void transport.close());
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get pages() {
      return state.pages;
    },
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

const foreign = { ...defaultConfig.foreign, allowedNetworks: ["127.0.0.0/8"], connectTimeoutMs: 2_000, totalTimeoutMs: 3_000 };

function agentAt(url: string, tool: string): ForeignAgentRecord {
  const u = new URL(url);
  return {
    orgId: "acme",
    agentKey: "tools",
    baseUrl: url,
    protocol: "mcp",
    credentialRef: null,
    allowHost: `${u.hostname}:${u.port}`,
    skills: [],
    clearanceCeiling: 0,
    costEstimate: 0,
    enabled: true,
    idempotent: false,
    tool,
    delivery: "auto",
    sendFields: [],
    costPerSecond: 0,
    createdAt: new Date(),
    updatedAt: new Date(),
  } as unknown as ForeignAgentRecord;
}

function sendRequest(agent: ForeignAgentRecord, request: unknown, started: string[]): TransportSendRequest {
  return {
    agent,
    bridge: { id: "00000000-0000-4000-8000-000000000001", request } as unknown as BridgeRecord,
    deadlineMs: Date.now() + 5_000,
    push: () => Promise.reject(new Error("an MCP call takes no push")),
    reach: { mayHaveReached: false },
    started: async (id) => {
      started.push(id);
    },
  };
}

describe("McpTransport", () => {
  let server: RunningMcpServer | undefined;
  const transport = new McpTransport(new AgentChannels({ foreign }), { foreign });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("describes a server that lists the registered tool: its name and the tool, delivery call", async () => {
    server = await startMcpServer({ name: "tool-box" });
    await expect(transport.describe(agentAt(server.url, "count"))).resolves.toEqual({ summary: "tool-box (MCP) tool count", delivery: "call", notes: [] });
  });

  it("follows tools/list pages to find the tool", async () => {
    const pager = await startPagingServer(["a", "b", "c", "deep"]);
    try {
      await expect(transport.describe(agentAt(pager.url, "deep"))).resolves.toMatchObject({ summary: "pager (MCP) tool deep" });
      expect(pager.pages).toBe(4);
    } finally {
      await pager.close();
    }
  });

  it("refuses a registration whose tool the server does not list: FAILED_PRECONDITION MCP_TOOL_MISSING", async () => {
    server = await startMcpServer();
    const error = await transport.describe(agentAt(server.url, "translate")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchyardError);
    expect(error).toMatchObject({ code: "FAILED_PRECONDITION", details: { reason: "MCP_TOOL_MISSING", tool: "translate", listed: ["echo", "fails", "slow", "deep", "count"] } });
    expect(server.calls).toEqual([]);
  });

  it("sends: started before the call, the tool's result as one complete artifact, usage from _meta", async () => {
    server = await startMcpServer({ echoMeta: { usage: { input_tokens: 12, output_tokens: 30, cost: 0.5 } } });
    const started: string[] = [];
    const request = sendRequest(agentAt(server.url, "echo"), { q: "tides" }, started);
    const sent = await transport.send(request);
    expect(started).toEqual(["mcp:00000000-0000-4000-8000-000000000001"]);
    expect(request.reach.mayHaveReached).toBe(true);
    expect(sent).toEqual({
      foreignTaskId: "mcp:00000000-0000-4000-8000-000000000001",
      dialect: "mcp",
      delivery: "call",
      observation: {
        foreignTaskId: "mcp:00000000-0000-4000-8000-000000000001",
        state: "completed",
        complete: true,
        artifacts: [{ artifactId: "result", parts: [{ echo: { q: "tides" } }] }],
        usage: { cost: 0.5, inputTokens: 12, outputTokens: 30 },
      },
    });
    expect(server.calls).toEqual([{ tool: "echo", args: { q: "tides" } }]);
  });

  it("wraps a request that is not an object as { value }", async () => {
    server = await startMcpServer();
    await transport.send(sendRequest(agentAt(server.url, "echo"), "plain words", []));
    expect(server.calls).toEqual([{ tool: "echo", args: { value: "plain words" } }]);
    expect(argumentsOf([1, 2])).toEqual({ value: [1, 2] });
    expect(argumentsOf(null)).toEqual({ value: null });
    expect(argumentsOf({ a: 1 })).toEqual({ a: 1 });
  });

  it("maps a tool error (isError) to a failed observation carrying the tool's text", async () => {
    server = await startMcpServer();
    const sent = await transport.send(sendRequest(agentAt(server.url, "fails"), {}, []));
    expect(sent.observation).toMatchObject({ state: "failed", message: "the test tool was told to fail", artifacts: [] });
  });

  it("fails before starting when the server is down: MCP_NETWORK, nothing reached it, retryable", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const started: string[] = [];
    const request = sendRequest(agentAt(`http://127.0.0.1:${port}/mcp`, "echo"), {}, started);
    const error = await transport.send(request).catch((e: unknown) => e);
    expect(error).toMatchObject({ details: { reason: "MCP_NETWORK", retryable: true } });
    expect(started).toEqual([]);
    expect(request.reach.mayHaveReached).toBe(false);
    expect(failedBeforeSending(error)).toBe(true);
  });

  it("moves its hard bound on with each progress when it knows the step's timeout; without it, the due time (+1 s) is final", async () => {
    server = await startMcpServer({ progressEveryMs: 100 });
    const agent = agentAt(server.url, "slow");
    // Due in 400 ms, a 400 ms step timeout: a 2 s tool lives on its progress and answers.
    let beats = 0;
    const extended = { ...sendRequest(agent, { ms: 2_000 }, []), deadlineMs: Date.now() + 400, stepTimeoutMs: 400, progress: () => void beats++ };
    const sent = await transport.send(extended);
    expect(sent.observation).toMatchObject({ state: "completed", artifacts: [{ parts: ["slept 2000"] }] });
    expect(beats).toBeGreaterThanOrEqual(10);
    // The same call without the step's timeout: abandoned at the due time plus the grace, MCP_TIMEOUT, after it started.
    const started = Date.now();
    const fixed = { ...sendRequest(agent, { ms: 3_000 }, []), deadlineMs: Date.now() + 400 };
    const error = await transport.send(fixed).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchyardError);
    expect(error).toMatchObject({ code: "TIMEOUT", details: { reason: "MCP_TIMEOUT" } });
    expect((error as Error).message).toMatch(/no answer by the step attempt's due time \(\+1000 ms\)/);
    expect(fixed.reach.mayHaveReached).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_300);
    expect(Date.now() - started).toBeLessThan(2_500);
  });

  it("answers poll with nothing and sends no cancel", async () => {
    await expect(transport.poll()).resolves.toBeUndefined();
    await expect(transport.cancel()).resolves.toBe(false);
  });
});

describe("MCP tool results", () => {
  it("maps content items when there is no structured content; never fetches resources", () => {
    const observation = observationOf("mcp:x", {
      content: [
        { type: "text", text: "hello" },
        { type: "image", data: "aGVsbG8=", mimeType: "image/png" },
        { type: "resource_link", uri: "https://example.com/a.txt", name: "a.txt", mimeType: "text/plain" },
        { type: "resource", resource: { uri: "file:///b", text: "inline" } },
      ],
    });
    expect(observation.artifacts).toEqual([
      {
        artifactId: "result",
        parts: [
          "hello",
          { image: { mediaType: "image/png", bytes: 5 } },
          { resource: { uri: "https://example.com/a.txt", name: "a.txt", mediaType: "text/plain" } },
          { resource: { uri: "file:///b", text: "inline" } },
        ],
      },
    ]);
    expect(observation).toMatchObject({ state: "completed", complete: true });
    expect(observation.usage).toBeUndefined();
  });

  it("reads usage from _meta.usage or _meta, in either spelling, ignoring junk", () => {
    expect(usageOf({ usage: { inputTokens: 1, outputTokens: 2 } })).toEqual({ inputTokens: 1, outputTokens: 2 });
    expect(usageOf({ prompt_tokens: 3, completion_tokens: 4, cost: 1.25 })).toEqual({ inputTokens: 3, outputTokens: 4, cost: 1.25 });
    expect(usageOf({ usage: { cost: -1, inputTokens: "7" } })).toBeUndefined();
    expect(usageOf(undefined)).toBeUndefined();
  });
});
