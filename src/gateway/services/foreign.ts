/**
 * ForeignAgentService: the calling tenant's registry of foreign agents, and each agent's breaker and bridges.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { disableForeignAgent, getForeignAgent, listForeignAgents, registerForeignAgent, updateForeignAgent } from "../../foreign/registry.js";
import { checkForeignRegistration } from "../../foreign/register-check.js";
import { ForeignAgentService } from "../../gen/switchyard/api/v1/foreign_pb.js";
import { withTenantTransaction } from "../../store/tenant-scope.js";
import { tenantCall } from "../auth.js";
import { foreignAgentInputFromProto, foreignAgentPatchFromProto, foreignAgentToProto } from "../convert/foreign.js";
import { bridgeToProto } from "../convert/bridges.js";
import type { ServiceDeps } from "./deps.js";

/**
 * The registry names fields as they are on an agent (`base_url`); in Register and Update they sit under `agent`,
 * so the paths a client sees are `agent.base_url`.
 */
async function underAgent<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof SwitchyardError) || error.code !== ErrorCode.InvalidArgument) throw error;
    const problems = Array.isArray(error.details.errors) ? (error.details.errors as Array<{ path: string; reason: string }>) : [];
    if (problems.length === 0) throw error;
    const prefixed = problems.map((p) => ({ path: `agent.${p.path}`, reason: p.reason }));
    const message = prefixed.length === 1 ? `${prefixed[0]!.path}: ${prefixed[0]!.reason}` : `${prefixed.length} problems: ${prefixed.map((p) => `${p.path}: ${p.reason}`).join("; ")}`;
    throw new SwitchyardError(ErrorCode.InvalidArgument, message, { cause: error, details: { path: prefixed[0]!.path, reason: prefixed[0]!.reason, errors: prefixed } });
  }
}

const DEFAULT_BRIDGE_LIMIT = 20;
const MAX_BRIDGE_LIMIT = 200;

export function foreignAgentService(deps: ServiceDeps): ServiceImpl<typeof ForeignAgentService> {
  const scoped = <T>(orgId: string, fn: Parameters<typeof withTenantTransaction<T>>[2]) => withTenantTransaction(deps.pool, orgId, fn);
  return {
    async register(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const input = foreignAgentInputFromProto(req.agent);
      // Reached before the transaction: a slow agent must not hold a connection (refusals throw FAILED_PRECONDITION).
      const check = deps.foreignTransports
        ? await checkForeignRegistration({ transports: deps.foreignTransports, orgId, input, logger: deps.logger, signal: ctx.signal })
        : { outcome: "not_checkable" as const, warnings: ["the agent was not checked: this gateway cannot reach foreign agents"] };
      const agent = await underAgent(() => scoped(orgId, (client) => registerForeignAgent(deps.stores.foreignAgents, client, orgId, input)));
      const checked = check.outcome === "checked" ? { check: { summary: check.summary ?? "", delivery: check.delivery ?? "" } } : {};
      return { agent: foreignAgentToProto(agent), warnings: check.warnings, ...checked };
    },
    async get(req, ctx) {
      const { orgId } = tenantCall(ctx);
      return { agent: foreignAgentToProto(await scoped(orgId, (client) => getForeignAgent(deps.stores.foreignAgents, client, orgId, req.agentKey))) };
    },
    async list(_req, ctx) {
      const { orgId } = tenantCall(ctx);
      const agents = await scoped(orgId, (client) => listForeignAgents(deps.stores.foreignAgents, client, orgId));
      return { agents: agents.map(foreignAgentToProto) };
    },
    async update(req, ctx) {
      const { orgId } = tenantCall(ctx);
      if (!req.agent || req.agent.agentKey === "") {
        throw new SwitchyardError(ErrorCode.InvalidArgument, "agent.agent_key: name the agent to update", { details: { path: "agent.agent_key" } });
      }
      const agentKey = req.agent.agentKey;
      const patch = foreignAgentPatchFromProto(req.agent, req.updateMask);
      const agent = await underAgent(() => scoped(orgId, (client) => updateForeignAgent(deps.stores.foreignAgents, client, orgId, agentKey, patch)));
      return { agent: foreignAgentToProto(agent) };
    },
    async status(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const limit = req.bridgeLimit || DEFAULT_BRIDGE_LIMIT;
      if (limit < 1 || limit > MAX_BRIDGE_LIMIT) {
        throw new SwitchyardError(ErrorCode.InvalidArgument, `bridge_limit: must be from 1 to ${MAX_BRIDGE_LIMIT}`, { details: { path: "bridge_limit" } });
      }
      const { agent, bridges, open } = await scoped(orgId, async (client) => ({
        agent: await getForeignAgent(deps.stores.foreignAgents, client, orgId, req.agentKey),
        // One after another: the reads share the transaction's client.
        bridges: await deps.stores.bridges.recentOfAgent(client, orgId, req.agentKey, limit),
        open: await deps.stores.bridges.openOfAgent(client, orgId, req.agentKey),
      }));
      return {
        agent: foreignAgentToProto(agent),
        breaker: deps.breakers?.state(orgId, agent.agentKey) ?? "unknown",
        bridges: bridges.map(bridgeToProto),
        openBridges: open,
      };
    },
    async disable(req, ctx) {
      const { orgId } = tenantCall(ctx);
      return { agent: foreignAgentToProto(await scoped(orgId, (client) => disableForeignAgent(deps.stores.foreignAgents, client, orgId, req.agentKey))) };
    },
  };
}
