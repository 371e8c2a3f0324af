/**
 * The A2A adapter of the ForeignTransport port (../transport.ts): the Agent Card through the agent's channel (its
 * guarded fetch and card cache), then SendMessage / GetTask / CancelTask through the A2A client, in the dialect the
 * registry prefers and the card offers. `describe` (at registration) also checks the card's security requirements
 * against the registration's credential.
 */
import type { AgentChannels } from "../agent-channels.js";
import type { BridgeRecord } from "../../store/bridges/bridge-store.js";
import type { ForeignObservation } from "../bridge-transition.js";
import type { ForeignAgentRecord } from "../registry.js";
import { failedBeforeSending } from "../send-reach.js";
import type { AgentDescription, ForeignTransport, TransportSendRequest, TransportSendResult } from "../transport.js";
import type { ProtocolPreference } from "./agent-card.js";
import { modesFor, skillOf } from "./message-parts.js";
import { checkCardSecurity, type CardSecurity } from "./card-security.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";

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
    requireSecurityMet(agent, card.security, card.cardUrl);
    const delivery = deliveryFor(agent, card);
    const notes = delivery === "poll" && agent.delivery !== "poll" ? ["the Agent Card offers no push notifications: results are polled with GetTask"] : [];
    return { summary: `${card.name || agent.agentKey} (A2A ${card.protocol})`, delivery, notes };
  }

  async send(request: TransportSendRequest): Promise<TransportSendResult> {
    const { agent, bridge, reach } = request;
    const channel = this.channels.get(agent);
    const card = await channel.cards.get(agent.orgId, agent.agentKey, {
      baseUrl: agent.baseUrl,
      requireSkill: requiredSkills(agent, bridge.request),
      // Only a registration that forces push needs the card to offer it; otherwise we poll (deliveryFor).
      requirePush: agent.delivery === "push",
      protocol: preferenceOf(agent),
      ...(request.signal ? { signal: request.signal } : {}),
    });
    const delivery = deliveryFor(agent, card);
    // A polled hop sends no push config at all: an agent that cannot push (or reach us) is never asked to.
    const push = delivery === "push" ? await request.push() : undefined;
    // The step's remaining time, not the per-call timeout: a blocking agent answers when its work is done.
    const sent = await channel
      .sendClient(request.deadlineMs)
      .send({
        card,
        protocol: card.protocol,
        message: {
          taskId: bridge.taskId,
          stepId: bridge.stepId,
          orgId: bridge.orgId,
          clearanceFloor: bridge.clearance,
          input: bridge.request,
          inputModes: modesFor(card, skillOf(bridge.request, agent.skills, card.skills)),
          messageId: bridge.id,
        },
        ...(push ? { push } : {}),
        ...(request.signal ? { signal: request.signal } : {}),
      })
      .catch((error: unknown) => {
        if (!failedBeforeSending(error)) reach.mayHaveReached = true;
        throw error;
      });
    reach.mayHaveReached = true;
    // The answer is the task as it stands (or a Message: the whole result): its artifacts are complete, so a
    // terminal answer resumes the step at once through the sender's applyObservation.
    const observation: ForeignObservation = {
      foreignTaskId: sent.foreignTaskId,
      state: sent.state,
      artifacts: sent.artifacts,
      complete: true,
      ...(sent.message !== undefined ? { message: sent.message } : {}),
      ...(sent.statusAnswer ? { statusAnswer: sent.statusAnswer } : {}),
      ...(sent.usage ? { usage: sent.usage } : {}),
    };
    return { foreignTaskId: sent.foreignTaskId, dialect: card.protocol, delivery, observation };
  }

  async poll(agent: ForeignAgentRecord, bridge: BridgeRecord, signal?: AbortSignal): Promise<ForeignObservation | undefined> {
    // A Message answer (no task) is resolved by its answer and never asked about; its stand-in id is no task id.
    if (bridge.foreignTaskId === null || bridge.foreignTaskId.startsWith("message:")) return undefined;
    const channel = this.channels.get(agent);
    const card = await channel.cards.get(agent.orgId, agent.agentKey, { baseUrl: agent.baseUrl, requirePush: false, protocol: dialectOf(bridge), ...(signal ? { signal } : {}) });
    const snapshot = await channel.client.getTask({ card, protocol: card.protocol, foreignTaskId: bridge.foreignTaskId, ...(signal ? { signal } : {}) });
    return {
      foreignTaskId: snapshot.foreignTaskId,
      state: snapshot.state,
      // GetTask answers with the whole task: its artifacts are complete.
      artifacts: snapshot.artifacts,
      complete: true,
      ...(snapshot.message !== undefined ? { message: snapshot.message } : {}),
      ...(snapshot.statusAnswer ? { statusAnswer: snapshot.statusAnswer } : {}),
      ...(snapshot.usage ? { usage: snapshot.usage } : {}),
    };
  }

  async cancel(agent: ForeignAgentRecord, bridge: BridgeRecord, signal?: AbortSignal): Promise<boolean> {
    if (bridge.foreignTaskId === null || bridge.foreignTaskId.startsWith("message:")) return false;
    const channel = this.channels.get(agent);
    const card = await channel.cards.get(agent.orgId, agent.agentKey, { baseUrl: agent.baseUrl, requirePush: false, protocol: dialectOf(bridge), ...(signal ? { signal } : {}) });
    await channel.client.cancelTask({ card, protocol: card.protocol, foreignTaskId: bridge.foreignTaskId, ...(signal ? { signal } : {}) });
    return true;
  }
}

/** Push when the registry allows it and the card offers it; poll when the registry says so or the card cannot push. */
function deliveryFor(agent: Pick<ForeignAgentRecord, "delivery">, card: { pushNotifications: boolean }): "push" | "poll" {
  return agent.delivery === "poll" || !card.pushNotifications ? "poll" : "push";
}

/**
 * FAILED_PRECONDITION `CARD_SECURITY_UNSATISFIED` when the card requires security the registration cannot present
 * (no `credential_ref`, or only schemes we cannot speak such as mutual TLS); see card-security.ts for what counts.
 */
function requireSecurityMet(agent: ForeignAgentRecord, security: CardSecurity, cardUrl: string): void {
  const verdict = checkCardSecurity(security, agent.credentialRef !== null);
  if (verdict.satisfied) return;
  const why = verdict.unmeetable ?? "register the agent with --credential-ref (credential_ref) naming the credential to send";
  throw new SwitchyardError(ErrorCode.FailedPrecondition, `foreign agent "${agent.agentKey}": the Agent Card requires security (${verdict.required.join(", ")}): ${why}`, {
    details: { reason: "CARD_SECURITY_UNSATISFIED", orgId: agent.orgId, agentKey: agent.agentKey, cardUrl, schemes: verdict.required },
  });
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
