/**
 * The RESULT envelope that resumes a foreign step. A resolved bridge does not touch the step itself: it puts this
 * envelope on the coordinator's inbox (through the outbox, in the bridge's own transaction), and the coordinator
 * applies it in its batches like any worker's RESULT — governed, audited as its own edge with actor
 * `foreign:<agent>`, deduplicated by its id. So a foreign resume takes the same locks, flags and hold streams as
 * every other resume, and the callback route never waits on a tenant's audit-chain head.
 */
import { inboxFor } from "../bus/shards.js";
import { continueTrace } from "../telemetry/traceparent.js";
import { tracingOn } from "../telemetry/tracing.js";
import { COORDINATOR_ENDPOINT, EndpointKind, EnvelopeKind, ResultStatus, createEnvelope, jsonPayload } from "../bus/codec.js";
import type { EnvelopeSigner } from "../bus/auth/bus-auth.js";
import type { StepError } from "../core/model.js";
import { ErrorCode, isSwitchyardError } from "../errors.js";
import type { BridgeRecord } from "../store/bridges/bridge-store.js";
import type { PricedBy } from "./pricing.js";

export interface ForeignOutcome {
  ok: boolean;
  /** The step output when ok (already normalised from the agent's artifacts). */
  output: unknown;
  error: StepError | null;
  /** Cost units accrued for the call (pricing.ts). */
  cost: number;
  /** How `cost` was reached; absent when nothing was charged (a failed send). Carried as `Usage.priced_by`. */
  pricedBy?: PricedBy;
}

export interface OutboxEnvelope {
  orgId: string;
  stream: string;
  envelopeId: string;
  bytes: Uint8Array;
}

/**
 * `final` for what the agent said; `send-failed` when the send failed after a request may have reached the agent
 * (a timeout, a reset, an error answer); `not-sent` when it failed before any request left (card, DNS, egress
 * refusal, breaker open), so a re-send cannot repeat anything at the agent.
 */
export type ForeignResultKind = "final" | "send-failed" | "not-sent";

/** How the gateway writes a foreign RESULT for the coordinator. */
export interface ResultWriting {
  /** The gateway identity: the coordinator accepts a FOREIGN result only under it. */
  signer: EnvelopeSigner;
  /** The bus's payload cap. */
  maxPayloadBytes: number;
  /** The deployment's shard count: the RESULT goes straight to its tenant's shard inbox (else the shared one). */
  shardCount?: number;
}

export function foreignResultId(bridgeId: string, kind: ForeignResultKind): string {
  return `a2a:${bridgeId}:${kind}`;
}

/** Whether a RESULT's envelope id says its send failed before anything reached the agent (kind `not-sent`). */
export function isNotSentResultId(envelopeId: string): boolean {
  return envelopeId.startsWith("a2a:") && envelopeId.endsWith(":not-sent");
}

/**
 * Encodes the RESULT for the bridge's step attempt, signed as the gateway (`signer`: the coordinator accepts a
 * FOREIGN result only under that identity, i.e. only from this path). An output over the payload cap becomes a failed RESULT with
 * FOREIGN_OUTPUT_TOO_LARGE: the agent answered, but nothing that large may enter the bus or the step record.
 */
export function foreignResultEnvelope(
  bridge: Pick<BridgeRecord, "id" | "orgId" | "taskId" | "stepId" | "attempt" | "agentKey" | "traceparent">,
  kind: ForeignResultKind,
  outcome: ForeignOutcome,
  writing: ResultWriting,
  nowMs: number,
): OutboxEnvelope {
  const { signer, maxPayloadBytes } = writing;
  const envelopeId = foreignResultId(bridge.id, kind);
  // The hop that applies this RESULT continues the bridge's trace (through the callback or egress span when active).
  const traceparent = tracingOn() ? continueTrace(bridge.traceparent) : undefined;
  const encode = (result: ForeignOutcome) =>
    signer.sign(
      createEnvelope({
        id: envelopeId,
        orgId: bridge.orgId,
        taskId: bridge.taskId,
        stepId: bridge.stepId,
        kind: EnvelopeKind.RESULT,
        source: { kind: EndpointKind.FOREIGN, id: bridge.agentKey },
        destination: COORDINATOR_ENDPOINT,
        attempt: bridge.attempt,
        status: result.ok ? ResultStatus.OK : ResultStatus.ERROR,
        ...(result.ok ? { payload: jsonPayload(result.output) } : {}),
        ...(result.error ? { error: { code: result.error.code, message: result.error.message, retryable: result.error.retryable ?? false } } : {}),
        usage: { cost: result.cost, ...(result.pricedBy ? { pricedBy: result.pricedBy } : {}) },
        createdAtMs: BigInt(nowMs),
        ...(traceparent ? { trace: { traceparent, tracestate: "" } } : {}),
      }),
    );
  let bytes: Uint8Array;
  try {
    bytes = encode(outcome);
  } catch (error) {
    if (!isSwitchyardError(error) || error.code !== ErrorCode.PayloadTooLarge) throw error;
    bytes = encode({ ...outcome, ok: false, output: null, error: outputTooLarge(bridge.agentKey, maxPayloadBytes) });
  }
  return { orgId: bridge.orgId, stream: inboxFor(bridge.orgId, writing.shardCount), envelopeId, bytes };
}

export function outputTooLarge(agentKey: string, maxPayloadBytes: number): StepError {
  return {
    code: "FOREIGN_OUTPUT_TOO_LARGE",
    message: `foreign agent ${agentKey} produced more than the ${maxPayloadBytes}-byte payload limit; the step fails closed`,
    retryable: false,
  };
}
