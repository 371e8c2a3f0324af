/**
 * `foreign register --protocol mcp` (CLI and API) describes the MCP server like an A2A card: initialize + tools/list
 * through the guarded channel. A tool the server does not list is refused (FAILED_PRECONDITION, MCP_TOOL_MISSING,
 * naming what it lists) and nothing is stored; a listed tool registers and says what was checked; a server that cannot
 * be reached registers with a warning. The server is a real MCP server on loopback (test/support/mcp-server.ts).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ForeignAgentService, ForeignProtocol } from "../../../src/gen/switchyard/api/v1/foreign_pb.js";
import { startMcpServer, type RunningMcpServer } from "../../support/mcp-server.js";
import { createCliEnvironment, type CliEnvironment } from "../../cli/helpers.js";
import { createGatewayFixture, type GatewayFixture } from "../../gateway/fixture.js";
import { deadUrl } from "../a2a/http-fixtures.js";

let server: RunningMcpServer;
beforeAll(async () => {
  server = await startMcpServer({ name: "lab-tools" });
});
afterAll(async () => {
  await server.close();
});

describe("switchyard foreign register --protocol mcp checks the server's tools", () => {
  let env: CliEnvironment;
  const LOOPBACK = { SWITCHYARD_EGRESS_ALLOWED_NETWORKS: "127.0.0.0/8" };
  beforeAll(async () => {
    env = await createCliEnvironment();
  });
  afterAll(async () => {
    await env.cleanup();
  });

  const register = (key: string, url: string, tool: string) =>
    env.run(["foreign", "register", key, "--tenant", "acme", "--url", url, "--protocol", "mcp", "--tool", tool, "--json"], { env: LOOPBACK });
  const listed = async () => (JSON.parse((await env.run(["foreign", "list", "--tenant", "acme", "--json"])).last) as { agents: Array<{ agentKey: string }> }).agents.map((a) => a.agentKey);

  it("refuses a tool the server does not list, naming the listed tools; nothing is stored", async () => {
    const run = await register("no-such-tool", server.url, "translate");
    expect(run.code).not.toBe(0);
    const out = run.stdout + run.stderr;
    expect(out).toContain("MCP_TOOL_MISSING");
    const error = (JSON.parse(run.stdout.trim() || run.stderr.trim()) as { error: { code: string; message: string; details: { listed: string[] } } }).error;
    expect(error.code).toBe("FAILED_PRECONDITION");
    expect(error.message).toMatch(/does not list tool "translate" \(it lists: echo, fails, slow, deep, count\)/);
    expect(error.details.listed).toContain("echo");
    expect(await listed()).not.toContain("no-such-tool");
    // describe lists tools; it never calls one.
    expect(server.calls).toEqual([]);
  });

  it("registers a listed tool and says what it checked", async () => {
    const run = await register("tools", server.url, "echo");
    expect(run.code).toBe(0);
    expect(JSON.parse(run.last)).toMatchObject({ agentKey: "tools", protocol: "mcp", tool: "echo" });
    expect(run.stderr).toMatch(/checked foreign:tools: lab-tools \(MCP\) tool echo, results by call/);
    expect(await listed()).toContain("tools");
    expect(server.calls).toEqual([]);
  });

  it("registers a server that cannot be reached (not deployed yet), with a warning", async () => {
    const url = `${await deadUrl()}/mcp`;
    const run = await register("later", url, "echo");
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/warning: foreign:later: the MCP server could not be reached, so its tools were not checked/);
    expect(await listed()).toContain("later");
  });
});

describe("ForeignAgentService.Register checks an MCP server's tools", () => {
  let fx: GatewayFixture;
  let key: string;
  beforeAll(async () => {
    fx = await createGatewayFixture({}, { configure: (config) => ({ ...config, foreign: { ...config.foreign, allowedNetworks: ["127.0.0.0/8"] } }) });
    key = await fx.tenant("acme");
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  const input = (agentKey: string, baseUrl: string, tool: string) => ({
    agent: { agentKey, baseUrl, allowHost: new URL(baseUrl).host, protocol: ForeignProtocol.MCP, tool },
  });

  it("refuses a missing tool (FAILED_PRECONDITION, MCP_TOOL_MISSING) and accepts a listed one", async () => {
    const client = fx.client(ForeignAgentService, key);
    const error = await client.register(input("api-tools", server.url, "translate")).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((error as ConnectError).rawMessage).toMatch(/does not list tool "translate"/);
    expect((await client.list({})).agents.map((a) => a.agentKey)).not.toContain("api-tools");

    const ok = await client.register(input("api-tools", server.url, "echo"));
    expect(ok.agent?.agentKey).toBe("api-tools");
    expect(ok.agent?.tool).toBe("echo");
    expect(ok.warnings).toEqual([]);
  });

  it("returns a warning, not an error, when the MCP server cannot be reached", async () => {
    const url = `${await deadUrl()}/mcp`;
    const ok = await fx.client(ForeignAgentService, key).register(input("api-later", url, "echo"));
    expect(ok.agent?.agentKey).toBe("api-later");
    expect(ok.warnings).toEqual([expect.stringMatching(/MCP server could not be reached/)]);
  });
});
