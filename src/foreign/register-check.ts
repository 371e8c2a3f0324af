/**
 * What `foreign register` (CLI and API) checks before a foreign agent is stored: reach the agent through its own
 * channel (`ForeignTransports.for(agent).describe` — for A2A the Agent Card via the guarded fetch, with the
 * registration's credential) and refuse a registration the agent cannot serve, with FAILED_PRECONDITION and the
 * card's `details.reason`:
 * - `CARD_SECURITY_UNSATISFIED`: the card requires security and no `credential_ref` meets it (card-security.ts);
 * - `CARD_MISSING_SKILL`: a `--skill` is not on the card;
 * - `CARD_NO_PROTOCOL`: no JSON-RPC interface in a dialect we speak that `--protocol` allows;
 * - `CARD_NO_PUSH`: `--delivery push` but the card offers no push notifications;
 * - `CARD_INVALID`: something answers at the card URL, but not an Agent Card;
 * - `MCP_TOOL_MISSING` (protocol `mcp`): the MCP server answered initialize and tools/list, and `--tool` is not listed.
 *
 * Not refused, registered with a warning instead (so an agent may be registered before it is deployed; every send
 * still checks the card — or, for MCP, the call itself fails the hop): the agent cannot be reached at all
 * (`CARD_UNREACHABLE`: down, DNS, timeout, non-2xx, or the egress guard of THIS process refusing the host; for MCP any
 * other `MCP_` failure of initialize/tools/list), the credential cannot be resolved in this process (it may live only
 * in the coordinators' environment), or the protocol has no `describe` here.
 * An input with problems of its own is not checked: storing it reports every problem (INVALID_ARGUMENT).
 */
import type { ForeignConfig } from "../config/index.js";
import { SwitchyardError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { foreignAgentProblems, type ForeignAgentInput, type ForeignAgentRecord } from "./registry.js";
import { A2ATransport } from "./a2a/a2a-transport.js";
import { McpTransport } from "./mcp/mcp-transport.js";
import { AgentChannels } from "./agent-channels.js";
import { ForeignTransports, type Delivery } from "./transport.js";

/** Refusals: the agent answered, and cannot serve this registration. */
const REFUSED_REASONS = new Set(["CARD_SECURITY_UNSATISFIED", "CARD_MISSING_SKILL", "CARD_NO_PROTOCOL", "CARD_NO_PUSH", "CARD_INVALID", "MCP_TOOL_MISSING"]);

export interface RegistrationCheck {
  /** `checked`: the agent was reached and serves the registration; otherwise why it was not checked. */
  outcome: "checked" | "unreachable" | "not_checkable" | "skipped";
  /** What describe found (e.g. the card's name and dialect), when checked. */
  summary?: string;
  /** How results will come back, when checked. */
  delivery?: Delivery;
  /** For the operator: why nothing was checked, or what describe noted (e.g. polling because no push). */
  warnings: string[];
}

export interface RegistrationCheckOptions {
  transports: ForeignTransports;
  orgId: string;
  input: ForeignAgentInput;
  signal?: AbortSignal;
  logger?: Logger;
}

/** Throws FAILED_PRECONDITION (see the module comment) or returns what to tell the operator. */
export async function checkForeignRegistration(options: RegistrationCheckOptions): Promise<RegistrationCheck> {
  const { transports, orgId, input } = options;
  if (foreignAgentProblems(input).length > 0) return { outcome: "skipped", warnings: [] };
  const agent = candidate(orgId, input);
  const log = (options.logger ?? silentLogger).child({ component: "foreign-register", orgId, agent: agent.agentKey });
  let transport;
  try {
    transport = transports.for(agent);
  } catch {
    return { outcome: "not_checkable", warnings: [`the ${agent.protocol} agent was not checked: this process cannot describe ${agent.protocol} agents`] };
  }
  try {
    const description = await transport.describe(agent, options.signal);
    return { outcome: "checked", summary: description.summary, delivery: description.delivery, warnings: description.notes };
  } catch (error) {
    const reason = error instanceof SwitchyardError ? String(error.details.reason ?? "") : "";
    if (REFUSED_REASONS.has(reason)) throw error;
    const why = error instanceof Error ? error.message : String(error);
    log.warn({ err: error, reason }, "foreign agent not checked at registration");
    if (reason === "CREDENTIAL_UNRESOLVED") {
      return { outcome: "not_checkable", warnings: [`the agent was not checked: ${why}; every send checks its card`] };
    }
    if (transport.kind === "mcp") {
      return { outcome: "unreachable", warnings: [`the MCP server could not be reached, so its tools were not checked (registered anyway; every call reaches it anew): ${why}`] };
    }
    return { outcome: "unreachable", warnings: [`the agent's card could not be fetched, so nothing was checked (registered anyway; every send checks the card): ${why}`] };
  }
}

/**
 * The transports a coordinator builds from this configuration (egress guard, allowed networks, secrets), for a
 * process that has none of its own (the CLI, a gateway without FOREIGN).
 */
export function foreignTransportsFor(foreign: ForeignConfig): ForeignTransports {
  const channels = new AgentChannels({ foreign });
  return new ForeignTransports([new A2ATransport(channels), new McpTransport(channels, { foreign })]);
}

/** The registry record the input will become (registry defaults), for describe. */
function candidate(orgId: string, input: ForeignAgentInput): ForeignAgentRecord {
  const now = new Date();
  return {
    orgId,
    agentKey: input.agentKey,
    baseUrl: input.baseUrl,
    protocol: input.protocol ?? "auto",
    credentialRef: input.credentialRef ?? null,
    allowHost: input.allowHost,
    skills: [...(input.skills ?? [])],
    clearanceCeiling: input.clearanceCeiling ?? 0,
    costEstimate: input.costEstimate ?? 0,
    enabled: input.enabled ?? true,
    idempotent: input.idempotent ?? false,
    tool: input.tool ?? null,
    delivery: input.delivery ?? "auto",
    sendFields: input.sendFields ? [...input.sendFields] : null,
    costPerSecond: input.costPerSecond ?? 0,
    createdAt: now,
    updatedAt: now,
  };
}
