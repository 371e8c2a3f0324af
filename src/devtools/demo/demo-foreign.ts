/**
 * The demo's FOREIGN hop: a local A2A agent (examples/agents/fact-checker.ts) that the demo starts, registers for
 * its tenant and reaches through the same governed path a remote agent would take — the registry, the egress guard,
 * the signed callback.
 *
 * The agent listens on 127.0.0.1, which the egress guard refuses by default; the demo's config admits loopback
 * through the operator allowlist (as `SWITCHYARD_EGRESS_ALLOWED_NETWORKS=127.0.0.0/8` would) and points the public
 * URL, which the callback links in every push config are built from, at the demo's own gateway.
 */
import type { ForeignAgentStore } from "../../store/foreign/foreign-agent-store.js";
import type { Config } from "../../config/index.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { registerForeignAgent, updateForeignAgent, type ForeignAgentInput, type ForeignAgentRecord } from "../../foreign/registry.js";
import type { Logger } from "../../logger.js";
import type { Queryable } from "../../store/db.js";
import type { RunningFactChecker } from "../../../examples/agents/fact-checker.js";

/** The demo workflow's `foreign:fact-checker`. */
export const DEMO_AGENT_KEY = "fact-checker";
export const DEMO_AGENT_SKILL = "fact-check";
/** The operator allowlist entry that lets the egress guard reach an agent on this host. */
export const LOOPBACK_NETWORK = "127.0.0.0/8";

/**
 * Imported on demand: the agent is built on the SDK's express integration, and express is a devDependency, so a
 * CLI that never runs the demo never loads it.
 */
export async function startDemoAgent(logger: Logger): Promise<RunningFactChecker> {
  const { startFactChecker } = await import("../../../examples/agents/fact-checker.js");
  return startFactChecker({
    host: "127.0.0.1",
    port: 0,
    name: DEMO_AGENT_KEY,
    // The sweep recovers a lost push (after SWITCHYARD_A2A_SWEEP_AFTER_MS), so the task survives it; say so on stderr.
    onPushError: (error, taskId) => logger.warn({ err: error, foreignTaskId: taskId }, "the fact-checker could not deliver a push"),
  });
}

/** The config the demo's runtime is built from: callbacks to `publicUrl`, loopback admitted by the egress guard. */
export function demoForeignConfig(config: Config, publicUrl: string): Config {
  const allowedNetworks = config.foreign.allowedNetworks.includes(LOOPBACK_NETWORK) ? config.foreign.allowedNetworks : [...config.foreign.allowedNetworks, LOOPBACK_NETWORK];
  return { ...config, gateway: { ...config.gateway, publicUrl }, foreign: { ...config.foreign, allowedNetworks } };
}

export interface DemoAgentRegistration {
  agent: ForeignAgentRecord;
  /** `registered` on a fresh database; `updated` when an earlier run left it (its port changes every run). */
  outcome: "registered" | "updated";
}

/**
 * Registers the agent for the tenant, or brings an earlier run's registration up to date (new port, enabled
 * again), so the demo can run any number of times against one database. Egress is allowed to exactly the agent's
 * host and port.
 */
export async function registerDemoAgent(agents: AgentRegistry, db: Queryable, tenant: string, baseUrl: string): Promise<DemoAgentRegistration> {
  const url = new URL(baseUrl);
  const wanted: ForeignAgentInput = {
    agentKey: DEMO_AGENT_KEY,
    baseUrl,
    protocol: "1.0",
    allowHost: `${url.hostname}:${url.port}`,
    skills: [DEMO_AGENT_SKILL],
    clearanceCeiling: 0,
    costEstimate: 0.5,
    enabled: true,
  };
  return registerOrUpdate(agents, db, tenant, wanted);
}

/** The registry port a demo registers through (`runtime.stores.foreignAgents`). */
export type AgentRegistry = Pick<ForeignAgentStore, "insert" | "lock" | "update">;

/** Registers `wanted`, or replaces what an earlier demo run registered under its key (every field of `wanted`). */
export async function registerOrUpdate(agents: AgentRegistry, db: Queryable, tenant: string, wanted: ForeignAgentInput): Promise<DemoAgentRegistration> {
  try {
    return { agent: await registerForeignAgent(agents, db, tenant, wanted), outcome: "registered" };
  } catch (error) {
    if (!(error instanceof SwitchyardError) || error.code !== ErrorCode.AlreadyExists) throw error;
    const { agentKey, ...patch } = wanted;
    return { agent: await updateForeignAgent(agents, db, tenant, agentKey, patch), outcome: "updated" };
  }
}
