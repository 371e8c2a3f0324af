/** `create(EnvelopeSchema, init)`, without reflection (see ../envelope-wire.ts for the contract). */
import {
  type BusAuth,
  type Endpoint,
  type Envelope,
  type ErrorInfo,
  type Payload,
  type ReplyTo,
  type TraceContext,
  type Usage,
} from "../../gen/switchyard/bus/v1/envelope_pb.js";
import {
  ENVELOPE,
  ENDPOINT,
  PAYLOAD,
  REPLY_TO,
  USAGE,
  ERROR_INFO,
  TRACE,
  BUS_AUTH,
  type EnvelopeInit,
  type Loose,
} from "./shared.js";

// Object literals in the key order protobuf-es gives a zero message (implicit-presence fields only; `turn`,
// explicit presence, is absent until set).
export const zeroEnvelope = (): Envelope => ({
  $typeName: ENVELOPE, id: "", orgId: "", taskId: "", stepId: "", kind: 0, attempt: 0, clearanceFloor: 0,
  correlationId: "", delegationDepth: 0, status: 0, sourceStepId: "", resultRef: "", createdAtMs: 0n,
});
export const zeroEndpoint = (): Endpoint => ({ $typeName: ENDPOINT, kind: 0, id: "" });
export const zeroPayload = (): Payload => ({ $typeName: PAYLOAD, data: new Uint8Array(0), contentType: "" });
export const zeroReplyTo = (): ReplyTo => ({ $typeName: REPLY_TO, taskId: "", stepId: "", attempt: 0 });
export const zeroUsage = (): Usage => ({ $typeName: USAGE, cost: 0, inputTokens: 0n, outputTokens: 0n, durationMs: 0n, pricedBy: "" });
export const zeroError = (): ErrorInfo => ({ $typeName: ERROR_INFO, code: "", message: "", retryable: false });
export const zeroTrace = (): TraceContext => ({ $typeName: TRACE, traceparent: "", tracestate: "" });
export const zeroBusAuth = (): BusAuth => ({ $typeName: BUS_AUTH, keyId: "", sender: "", mac: new Uint8Array(0) });

export const isMessageOf = (v: unknown, typeName: string): boolean =>
  v !== null && typeof v === "object" && (v as Loose).$typeName === typeName;

/** Copies the non-null init values of `keys` onto `target`, as create() does for scalar and enum fields. */
function assign(target: Loose, init: Loose, keys: readonly string[]): void {
  for (const key of keys) {
    const v = init[key];
    if (v != null) target[key] = (key === "data" || key === "mac") && Array.isArray(v) ? new Uint8Array(v) : v;
  }
}

function sub<T>(v: unknown, typeName: string, zero: () => T, keys: readonly string[]): unknown {
  if (v === null || typeof v !== "object" || Array.isArray(v) || (v as Loose).$typeName === typeName) return v;
  const m = zero() as Loose;
  assign(m, v as Loose, keys);
  return m;
}

const ENVELOPE_SCALARS = ["id", "orgId", "taskId", "stepId", "kind", "attempt", "clearanceFloor", "correlationId",
  "delegationDepth", "status", "sourceStepId", "resultRef", "createdAtMs"] as const;
// `optional` scalars (explicit presence): absent from the zero message and, like the sub-messages, set in field
// order after them when the init gives them — the key order create() produces. Field 22: `turn`.
const ENVELOPE_OPTIONAL_SCALARS = ["turn"] as const;
const SUBS: ReadonlyArray<readonly [string, string, () => unknown, readonly string[]]> = [
  ["source", ENDPOINT, zeroEndpoint, ["kind", "id"]],
  ["destination", ENDPOINT, zeroEndpoint, ["kind", "id"]],
  ["replyTo", REPLY_TO, zeroReplyTo, ["taskId", "stepId", "attempt"]],
  ["payload", PAYLOAD, zeroPayload, ["data", "contentType"]],
  ["usage", USAGE, zeroUsage, ["cost", "inputTokens", "outputTokens", "durationMs", "pricedBy"]],
  ["error", ERROR_INFO, zeroError, ["code", "message", "retryable"]],
  ["trace", TRACE, zeroTrace, ["traceparent", "tracestate"]],
  ["auth", BUS_AUTH, zeroBusAuth, ["keyId", "sender", "mac"]],
];

/** The same message `create(EnvelopeSchema, init)` returns. */
export function initEnvelope(init?: EnvelopeInit): Envelope {
  if (isMessageOf(init, ENVELOPE)) return init as Envelope;
  const m = zeroEnvelope();
  if (init === undefined) return m;
  const i = init as Loose;
  assign(m as unknown as Loose, i, ENVELOPE_SCALARS);
  for (const [key, typeName, zero, keys] of SUBS) {
    const v = i[key];
    if (v != null) (m as unknown as Loose)[key] = sub(v, typeName, zero, keys);
  }
  assign(m as unknown as Loose, i, ENVELOPE_OPTIONAL_SCALARS);
  return m;
}
