/**
 * The A2A adapter of the ForeignTransport port (../transport.ts): the Agent Card through the agent's channel (its
 * guarded fetch and card cache), then SendMessage / GetTask / CancelTask through the A2A client, in the dialect the
 * registry prefers and the card offers.
 */
import type { AgentChannels } from "../agent-channels.js";
import type { BridgeRecord } from "../bridge-store.js";
import type { ForeignObservation } from "../bridge-transition.js";
import type { ForeignAgentRecord } from "../registry.js";
import { failedBeforeSending } from "../send-reach.js";
import type { AgentDescription, ForeignTransport, TransportSendRequest, TransportSendResult } from "../transport.js";
import type { ProtocolPreference } from "./agent-card.js";

export class A2ATransport implements ForeignTransport {
  readonly kind = "a2a" as const;

  constructor(private readonly channels: AgentChannels) {}

  async describe(agent: ForeignAgentRecord, signal?: AbortSignal): Promise<AgentDescription> {
    const channel = this.channels.get(agent);
    const card = await channel.cards.get(agent.orgId, agent.agentKey, {
      baseUrl: agent.baseUrl,
      requireSkill: agent.skills,
      requirePush: agent.delivery === "push",
      protocol: preferenceOf(agent),
      forceRefresh: true,
      ...(signal ? { signal } : {}),
    });
    const delivery = agent.delivery === "poll" || !card.pushNotifications ? "poll" : "push";
    const notes = delivery === "poll" && agent.delivery !== "poll" ? ["the Agent Card offers no push notifications: results are polled with GetTask"] : [];
    return { summary: `${card.name || agent.agentKey} (A2A ${card.protocol})`, delivery, notes };
  }

  async send(request: TransportSendRequest): Promise<TransportSendResult> {
    const { agent, bridge, reach } = request;
    const channel = this.channels.get(agent);
    const card = await channel.cards.get(agent.orgId, agent.agentKey, {
      baseUrl: agent.baseUrl,
      requireSkill: requiredSkills(agent, bridge.request),
      requirePush: true,
      protocol: preferenceOf(agent),
      ...(request.signal ? { signal: request.signal } : {}),
    });
    const push = await request.push();
    const sent = await channel.client
      .send({
        card,
        protocol: card.protocol,
        message: { taskId: bridge.taskId, stepId: bridge.stepId, orgId: bridge.orgId, clearanceFloor: bridge.clearance, input: bridge.request, messageId: bridge.id },
        push,
        ...(request.signal ? { signal: request.signal } : {}),
      })
      .catch((error: unknown) => {
        if (!failedBeforeSending(error)) reach.mayHaveReached = true;
        throw error;
      });
    reach.mayHaveReached = true;
    return {
      foreignTaskId: sent.foreignTaskId,
      dialect: card.protocol,
      delivery: "push",
      observation: { foreignTaskId: sent.foreignTaskId, state: sent.state, artifacts: [], ...(sent.usage ? { usage: sent.usage } : {}) },
    };
  }

  async poll(agent: ForeignAgentRecord, bridge: BridgeRecord, signal?: AbortSignal): Promise<ForeignObservation | undefined> {
    if (bridge.foreignTaskId === null) return undefined;
    const channel = this.channels.get(agent);
    const card = await channel.cards.get(agent.orgId, agent.agentKey, { baseUrl: agent.baseUrl, requirePush: false, protocol: dialectOf(bridge), ...(signal ? { signal } : {}) });
    const snapshot = await channel.client.getTask({ card, protocol: card.protocol, foreignTaskId: bridge.foreignTaskId, ...(signal ? { signal } : {}) });
    return {
      foreignTaskId: snapshot.foreignTaskId,
      state: snapshot.state,
      // GetTask answers with the whole task: its artifacts are complete.
      artifacts: snapshot.artifacts,
      ...(snapshot.message !== undefined ? { message: snapshot.message } : {}),
      ...(snapshot.usage ? { usage: snapshot.usage } : {}),
    };
  }

  async cancel(agent: ForeignAgentRecord, bridge: BridgeRecord, signal?: AbortSignal): Promise<boolean> {
    if (bridge.foreignTaskId === null) return false;
    const channel = this.channels.get(agent);
    const card = await channel.cards.get(agent.orgId, agent.agentKey, { baseUrl: agent.baseUrl, requirePush: false, protocol: dialectOf(bridge), ...(signal ? { signal } : {}) });
    await channel.client.cancelTask({ card, protocol: card.protocol, foreignTaskId: bridge.foreignTaskId, ...(signal ? { signal } : {}) });
    return true;
  }
}

function preferenceOf(agent: Pick<ForeignAgentRecord, "protocol">): ProtocolPreference {
  return agent.protocol === "mcp" ? "auto" : agent.protocol;
}

/** The dialect the bridge was sent in (its registry preference until then). */
function dialectOf(bridge: Pick<BridgeRecord, "dialect">): ProtocolPreference {
  return bridge.dialect === "mcp" ? "auto" : bridge.dialect;
}

/**
 * Skills the card must list: every skill the registry expects of the agent, plus the `skill` named by a step input
 * object (e.g. a delegation payload `{ skill: "translate", … }`), when there is one.
 */
export function requiredSkills(agent: Pick<ForeignAgentRecord, "skills">, input: unknown): string[] {
  const skills = [...agent.skills];
  const named = input !== null && typeof input === "object" && !Array.isArray(input) ? (input as Record<string, unknown>).skill : undefined;
  if (typeof named === "string" && named !== "" && !skills.includes(named)) skills.push(named);
  return skills;
}
