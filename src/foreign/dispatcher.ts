/**
 * The A2A adapter of the ForeignDispatcher port. It runs INSIDE the hop's transaction, after the governor allowed the
 * hop and its audit row was written, and sends nothing: it checks the registry (agent registered and enabled, the
 * hop's clearance floor within the agent's ceiling), restricts the input to the fields the agent may receive
 * (send-fields.ts) and writes the `a2a_bridge` row (status `pending_send`) with the hash of exactly that. The
 * post-commit sender (sender.ts) opens the foreign task, so no byte leaves before the audit row is committed — and
 * a rolled-back hop leaves no bridge behind.
 */
import type { EnvelopeSpec } from "../core/model.js";
import type { ForeignDispatcher, ForeignDispatchOutcome } from "../coordinator/foreign-dispatcher.js";
import { ErrorCode } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { BridgeStore } from "../store/bridges/bridge-store.js";
import type { LinkKeyStore } from "../store/approvals/approval-store.js";
import { notificationSecret, sha256Hex } from "./callback-token.js";
import type { ForeignAgentStore } from "../store/foreign/foreign-agent-store.js";
import { INPUT_NOT_SENDABLE, sendableInput, sentHash } from "./send-fields.js";

export const FOREIGN_PREFIX = "foreign:";

export interface A2ADispatcherOptions {
  /** The foreign agent registry's port (`runtime.stores.foreignAgents`), read in the hop's transaction. */
  agents: Pick<ForeignAgentStore, "find">;
  /** Where the bridge row is written, in the hop's transaction. */
  bridges: Pick<BridgeStore, "insert">;
  /** The tenant's link key the bridge's callback tokens are signed with, made on first use in the hop's transaction. */
  linkKeys: Pick<LinkKeyStore, "ensure">;
  /** Told after a bridge row was written (the sender may look soon; the row is visible once the hop commits). */
  onBridge?: () => void;
}

export function agentKeyOf(destination: string): string {
  return destination.startsWith(FOREIGN_PREFIX) ? destination.slice(FOREIGN_PREFIX.length) : destination;
}

export function createA2ADispatcher(options: A2ADispatcherOptions): ForeignDispatcher {
  return {
    async dispatch(client: Queryable, envelope: EnvelopeSpec): Promise<ForeignDispatchOutcome> {
      const agentKey = agentKeyOf(envelope.destination);
      const agent = await options.agents.find(client, envelope.orgId, agentKey);
      if (!agent || !agent.enabled) {
        return {
          accepted: false,
          error: { code: ErrorCode.ForeignUnavailable, message: `agent ${agentKey} is not ${agent ? "enabled" : "registered"} for tenant ${envelope.orgId}`, retryable: false },
        };
      }
      if (envelope.clearanceFloor > agent.clearanceCeiling) {
        return {
          accepted: false,
          error: {
            code: ErrorCode.ClearanceDenied,
            message: `clearance floor ${envelope.clearanceFloor} exceeds the clearance ceiling ${agent.clearanceCeiling} of foreign agent ${agentKey}`,
            retryable: false,
          },
        };
      }
      let input: unknown = null;
      try {
        input = (JSON.parse(envelope.payloadJson) as { input?: unknown }).input ?? null;
      } catch {
        // The hop's own payload: always JSON. Sent as null rather than failing a governed hop on our own bug.
      }
      // Only the registered fields leave (send-fields.ts); the bridge's request is all a transport ever sends.
      const sendable = sendableInput(input, agent.sendFields);
      if (!sendable.ok) {
        return {
          accepted: false,
          error: { code: INPUT_NOT_SENDABLE, message: `foreign agent ${agentKey} may receive only some input fields: ${sendable.reason}`, retryable: false },
        };
      }
      const hash = sentHash(sendable.request);
      const key = await options.linkKeys.ensure(client, envelope.orgId);
      await options.bridges.insert(client, {
        id: envelope.id,
        orgId: envelope.orgId,
        taskId: envelope.taskId,
        stepId: envelope.stepId,
        attempt: envelope.attempt,
        agentKey,
        dialect: agent.protocol,
        notificationTokenHash: sha256Hex(notificationSecret(key, envelope.id)),
        tokenKid: key.kid,
        request: sendable.request,
        sentHash: hash,
        clearance: envelope.clearanceFloor,
        traceparent: envelope.traceparent,
      });
      options.onBridge?.();
      return { accepted: true, sentHash: hash };
    },
  };
}
