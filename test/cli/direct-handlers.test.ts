/**
 * The CLI's direct mode for `connection`, `ingest` and `foreign list|disable` runs the gateway's own handlers
 * (ConnectionService, IngestService, ForeignAgentService) in-process (issue 27 §4): every call is seen by the handler,
 * through the `cli` channel, and what the operator says with `--actor` is recorded as said (gateway/auth.ts
 * `callActor`), not as an API key's action.
 */
import { createPostgresStores } from "../../src/store/postgres-stores.js";
import { Readable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { HandlerContext } from "@connectrpc/connect";
import { runCli } from "../../src/cli/main.js";
import { callChannel } from "../../src/gateway/auth.js";
import { registerForeignAgent } from "../../src/foreign/registry.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { keyItem, uniqueSecret } from "../vault/helpers.js";
import { createCliEnvironment, ONE_STEP_WORKFLOW, type CliEnvironment } from "./helpers.js";

const stores = createPostgresStores();

/** `Service.method channel` of every handler call in this process. */
const handled = vi.hoisted(() => [] as string[]);

vi.mock("../../src/gateway/services/connections.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/gateway/services/connections.js")>();
  const impl = original.connectionService;
  return { ...original, connectionService: (deps: Parameters<typeof impl>[0]) => recording("ConnectionService", impl(deps)) };
});
vi.mock("../../src/gateway/services/ingest.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/gateway/services/ingest.js")>();
  const impl = original.ingestService;
  return { ...original, ingestService: (deps: Parameters<typeof impl>[0]) => recording("IngestService", impl(deps)) };
});
vi.mock("../../src/gateway/services/foreign.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/gateway/services/foreign.js")>();
  const impl = original.foreignAgentService;
  return { ...original, foreignAgentService: (deps: Parameters<typeof impl>[0]) => recording("ForeignAgentService", impl(deps)) };
});

/** A service's handlers, each writing its call down with the channel it came through before it runs. */
function recording<S extends object>(service: string, impl: S): S {
  const wrapped: Record<string, unknown> = {};
  for (const [method, fn] of Object.entries(impl)) {
    wrapped[method] = (req: unknown, ctx: HandlerContext) => {
      handled.push(`${service}.${method} ${callChannel(ctx)}`);
      return (fn as (req: unknown, ctx: HandlerContext) => unknown)(req, ctx);
    };
  }
  return wrapped as S;
}

describe("direct mode runs the gateway's handlers", () => {
  let cli: CliEnvironment;
  const keyEnv = { SWITCHYARD_SECRET_ENCRYPTION_KEY: keyItem("k1") };

  async function run(argv: string[], stdin?: string) {
    let stdout = "";
    let stderr = "";
    const code = await runCli(argv, {
      env: { ...cli.env, ...keyEnv },
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: (t: string) => (stderr += t) },
      cwd: cli.dir,
      handleSignals: false,
      stdin: Readable.from(stdin === undefined ? [] : [Buffer.from(stdin)]),
    });
    return { code, stdout, stderr };
  }

  beforeAll(async () => {
    cli = await createCliEnvironment();
    await submitWorkflow(cli.db.pool, "acme", parseWorkflowDefinition(ONE_STEP_WORKFLOW));
    await registerForeignAgent(stores.foreignAgents, cli.db.pool, "acme", { agentKey: "weather", baseUrl: "https://weather.example.com/a2a", allowHost: "weather.example.com", skills: [] });
  });
  afterAll(async () => {
    await cli?.cleanup();
  });
  beforeEach(() => {
    handled.length = 0;
  });

  it("connection: ConnectionService records the operator's --actor as said", async () => {
    const added = await run(["connection", "add", "--tenant", "acme", "--kind", "github", "--account", "github.com", "--secret-stdin", "--actor", "alice", "--json"], uniqueSecret());
    expect(added.stderr).toBe("");
    expect(JSON.parse(added.stdout)).toMatchObject({ orgId: "acme", kind: "github", createdBy: "alice" });
    const id = JSON.parse(added.stdout).id as string;
    expect((await run(["connection", "rotate", "--tenant", "acme", "--id", id, "--secret-stdin"], uniqueSecret())).code).toBe(0);
    expect((await run(["connection", "list", "--tenant", "acme"])).code).toBe(0);
    expect((await run(["connection", "delete", "--tenant", "acme", "--id", id, "--actor", "bob"])).code).toBe(0);
    expect(handled).toEqual(["ConnectionService.add cli", "ConnectionService.rotate cli", "ConnectionService.list cli", "ConnectionService.delete cli"]);
    const { rows } = await cli.db.pool.query("SELECT verdict, actor FROM audit_log WHERE destination = $1 ORDER BY seq", [`connection:${id}`]);
    expect(rows).toEqual([
      { verdict: "added", actor: "alice" },
      { verdict: "rotated", actor: "cli" },
      { verdict: "deleted", actor: "bob" },
    ]);
  });

  it("ingest: IngestService creates, lists, rotates and disables", async () => {
    const created = await run(["ingest", "create", "--tenant", "acme", "--source", "github", "--workflow", "one-step", "--json"]);
    expect(created.code).toBe(0);
    const id = JSON.parse(created.stdout).endpoint.id as string;
    expect((await run(["ingest", "list", "--tenant", "acme"])).code).toBe(0);
    expect((await run(["ingest", "rotate-secret", "--tenant", "acme", "--id", id])).code).toBe(0);
    expect((await run(["ingest", "disable", "--tenant", "acme", "--id", id])).code).toBe(0);
    expect(handled).toEqual(["IngestService.create cli", "IngestService.list cli", "IngestService.rotateSecret cli", "IngestService.disable cli"]);
  });

  it("foreign list and disable: ForeignAgentService", async () => {
    expect(JSON.parse((await run(["foreign", "list", "--tenant", "acme", "--json"])).stdout).agents).toMatchObject([{ orgId: "acme", agentKey: "weather", sendFields: null, credentialRef: null, tool: null }]);
    expect((await run(["foreign", "disable", "weather", "--tenant", "acme"])).stdout).toBe("disabled foreign:weather for tenant acme\n");
    expect(handled).toEqual(["ForeignAgentService.list cli", "ForeignAgentService.disable cli"]);
  });
});
