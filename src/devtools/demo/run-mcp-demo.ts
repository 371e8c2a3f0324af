/**
 * `npm run demo -- mcp`: role → MCP tool → role, on loopback, narrated.
 *
 * An example MCP server (examples/mcp/text-stats.ts, Streamable HTTP) stands for a tool outside the perimeter → a
 * coordinator, the writer and publisher workers → the tool registered for the tenant (`--protocol mcp --tool
 * text_stats`, egress allowed to its host:port only) and described (the server must list the tool) → the workflow
 * examples/workflows/mcp-demo.yaml: the writer drafts, the hop to `foreign:text-stats` is governed as a2a_egress and
 * audited before any byte leaves, ONE tools/call measures the draft and its answer resumes the step, the publisher
 * publishes → the hops from the audit log and the chain.
 */
import { readFile } from "node:fs/promises";
import { listBridges } from "../../store/bridges/postgres-bridge-store.js";
import { assetPath } from "../../package-paths.js";
import type { ForeignAgentInput, ForeignAgentRecord } from "../../foreign/registry.js";
import { verifyChain } from "../../governance/audit-verify.js";
import type { Queryable } from "../../store/db.js";
import { submitWorkflow } from "../../store/workflow-store.js";
import { createTenant, getTenant } from "../../tenancy/tenants.js";
import { parseWorkflowDefinition, topologicalOrder } from "../../workflow/definition.js";
import { describeVerification, formatNumber } from "../../cli/output.js";
import { switchOnDemoFlags } from "./demo-flags.js";
import { LOOPBACK_NETWORK, registerOrUpdate, type AgentRegistry } from "./demo-foreign.js";
import { DEMO_ACTOR, type DemoOptions } from "./run-demo.js";
import { startDemoStack } from "./demo-stack.js";
import { formatHopsTable } from "./hops-table.js";
import { indent, prepareDemoDatabase, watchNarrated } from "./narration.js";

export const MCP_WORKFLOW_PATH = assetPath("examples/workflows/mcp-demo.yaml");
export const MCP_DEMO_AGENT_KEY = "text-stats";
const ROLES = ["writer", "publisher"] as const;
/** The same options as the main demo: config, narration, logger, tenant, topic, time bound, signal. */
export type McpDemoOptions = DemoOptions;

export async function runMcpDemo(options: McpDemoOptions): Promise<{ ok: boolean; taskId?: string }> {
  const tenant = options.tenant ?? "demo";
  const say = (line = "") => options.print(line);
  say("Switchyard MCP demo: a role, then a tool outside the perimeter reached over the Model Context Protocol, then a role.");
  say("The tool call is governed, audited and priced like any hop, and is made at most once.");
  say();
  await prepareDemoDatabase(options.config.databaseUrl, say);

  say('2. Starting the example MCP server "text-stats" (examples/mcp/text-stats.ts, @modelcontextprotocol/sdk, Streamable HTTP)');
  // Imported on demand, like the A2A demo agent: a CLI that never runs this demo never loads the server side.
  const { startTextStats, TEXT_STATS_TOOL } = await import("../../../examples/mcp/text-stats.js");
  const server = await startTextStats({ host: "127.0.0.1", port: 0 });
  try {
    say(`   ${server.url} — one tool, "${TEXT_STATS_TOOL}"`);
    say(`3. Starting a coordinator and workers for the roles ${ROLES.join(", ")}`);
    const stack = await startDemoStack({ config: options.config, logger: options.logger, roles: ROLES });
    try {
      const { pool, flags, tasks, stores } = stack.runtime;
      say(`   the egress guard admits ${LOOPBACK_NETWORK} for this run (SWITCHYARD_EGRESS_ALLOWED_NETWORKS)`);
      if (!(await getTenant(stores.tenants, pool, tenant))) await createTenant(stores.tenants, pool, { orgId: tenant, name: tenant });
      say(`   ${await switchOnDemoFlags({ pool, flags, tenant, roles: ROLES, delegatingRoles: [], egress: true, actor: DEMO_ACTOR })}`);

      const { agent, outcome } = await registerTool(stores.foreignAgents, pool, tenant, server.url, TEXT_STATS_TOOL);
      say(`4. ${outcome === "registered" ? "Registered" : "Updated the registration of"} foreign agent "${agent.agentKey}" for tenant "${tenant}": MCP tool ${agent.tool}, egress allowed to ${agent.allowHost} only`);
      say(`   (by hand: switchyard foreign register ${agent.agentKey} --tenant ${tenant} --url ${server.url} --protocol mcp --tool ${agent.tool})`);
      const description = await stack.runtime.a2a?.transports.for(agent).describe(agent, options.signal);
      if (description) say(`   described through the egress guard: ${description.summary}, delivery ${description.delivery} (the answer comes in the call)`);

      const definition = parseWorkflowDefinition(await readFile(MCP_WORKFLOW_PATH, "utf8"), { format: "yaml" });
      const submitted = await submitWorkflow(pool, tenant, definition);
      say(`5. Submitted examples/workflows/mcp-demo.yaml: ${submitted.ref}: ${topologicalOrder(definition).map((s) => s.id).join(" → ")}`);
      const input = { topic: options.topic ?? "governed agent coordination" };
      const started = await tasks.start({ orgId: tenant, workflow: submitted.ref, input });
      say(`6. Task ${started.taskId} with input ${JSON.stringify(input)}; watching it`);
      const final = await watchNarrated({ tasks, orgId: tenant, taskId: started.taskId, timeoutMs: options.timeoutMs ?? 60_000, signal: options.signal }, say);

      const measured = final.steps.find((s) => s.id === "measure");
      say(`7. The tool was called ${server.received.length} time(s); its answer, the "measure" step's output: ${JSON.stringify(measured?.output ?? null)}`);
      const [bridge] = await listBridges(pool, tenant, final.id);
      if (bridge) say(`   bridge ${bridge.id.slice(0, 8)}: ${bridge.status}, dialect ${bridge.dialect}, foreign id ${bridge.foreignTaskId}`);
      say("8. The task's audit rows in seq order:");
      const rows = await stack.runtime.stores.audit.list(pool, tenant, { taskId: final.id, limit: 1_000 });
      say(indent(formatHopsTable(rows)));
      say(`   total cost of the task: ${formatNumber(final.cost)}`);
      if (final.error) say(`   error: ${final.error.code}: ${final.error.message}`);
      const verification = await verifyChain(stack.runtime.stores.audit, pool, tenant);
      say(`9. ${describeVerification(tenant, verification)}`);
      const ok = final.status === "completed" && server.received.length === 1 && verification.ok;
      say();
      say(ok ? "Demo finished: the draft was measured by the MCP tool in one call, published, and the chain verifies." : "Demo FAILED: see the steps above.");
      return { ok, taskId: final.id };
    } finally {
      await stack.stop();
    }
  } finally {
    await server.close();
  }
}

/** Registers the tool for the tenant, or brings an earlier run's registration up to date (its port changes every run). */
async function registerTool(agents: AgentRegistry, db: Queryable, tenant: string, url: string, tool: string): Promise<{ agent: ForeignAgentRecord; outcome: "registered" | "updated" }> {
  const u = new URL(url);
  const wanted: ForeignAgentInput = {
    agentKey: MCP_DEMO_AGENT_KEY,
    baseUrl: url,
    protocol: "mcp",
    tool,
    allowHost: `${u.hostname}:${u.port}`,
    skills: [],
    clearanceCeiling: 0,
    costEstimate: 0.2,
    enabled: true,
  };
  return registerOrUpdate(agents, db, tenant, wanted);
}
