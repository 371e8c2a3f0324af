/**
 * Envelope encoding for the bus: protobuf binary, validated on both sides. A decode failure is a
 * MALFORMED_ENVELOPE error that the consumer turns into a dead letter. The wire work is the hand-rolled codec
 * in envelope-wire.ts (equivalent to protobuf-es create / toBinary / fromBinary, several times faster).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  EndpointKind,
  EnvelopeKind,
  EnvelopeSchema,
  type Endpoint,
  type Envelope,
} from "../gen/switchyard/bus/v1/envelope_pb.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { envelopeFromBinary, envelopeToBinary, initEnvelope } from "./envelope-wire.js";
import type { Destination } from "../domain.js";

export { EndpointKind, EnvelopeKind, ResultStatus } from "../gen/switchyard/bus/v1/envelope_pb.js";
export type { Envelope, Endpoint } from "../gen/switchyard/bus/v1/envelope_pb.js";
export type EnvelopeInit = MessageInitShape<typeof EnvelopeSchema>;

export function createEnvelope(init: EnvelopeInit): Envelope {
  return initEnvelope(init);
}

function malformed(message: string, details: Record<string, unknown> = {}): SwitchyardError {
  return new SwitchyardError(ErrorCode.MalformedEnvelope, message, { details });
}

/** Checks the fields every envelope must carry; throws MALFORMED_ENVELOPE / PAYLOAD_TOO_LARGE. */
export function validateEnvelope(envelope: Envelope, maxPayloadBytes: number): Envelope {
  if (!envelope.id) throw malformed("envelope has no id");
  if (!envelope.orgId) throw malformed("envelope has no org_id", { envelopeId: envelope.id });
  if (envelope.kind === EnvelopeKind.UNSPECIFIED || !(envelope.kind in EnvelopeKind)) {
    throw malformed(`envelope kind ${envelope.kind} is not one of QUERY, WORK, RESULT, REPLY, CONTROL`, { envelopeId: envelope.id });
  }
  if (envelope.kind !== EnvelopeKind.CONTROL && (!envelope.taskId || !envelope.stepId)) {
    throw malformed("envelope has no task_id or step_id", { envelopeId: envelope.id });
  }
  const size = envelope.payload?.data.byteLength ?? 0;
  if (size > maxPayloadBytes) {
    throw new SwitchyardError(ErrorCode.PayloadTooLarge, `payload is ${size} bytes, over the ${maxPayloadBytes}-byte limit`, {
      details: { envelopeId: envelope.id, size, limit: maxPayloadBytes },
    });
  }
  return envelope;
}

export function encodeEnvelope(envelope: Envelope, maxPayloadBytes: number): Uint8Array {
  return envelopeToBinary(validateEnvelope(envelope, maxPayloadBytes));
}

export function decodeEnvelope(bytes: Uint8Array, maxPayloadBytes: number): Envelope {
  let envelope: Envelope;
  try {
    // Strict: a known field with the wrong wire type or a sub-message overrunning its length is refused
    // here, where protobuf-es would have misread it.
    envelope = envelopeFromBinary(bytes);
  } catch (error) {
    throw new SwitchyardError(ErrorCode.MalformedEnvelope, `envelope does not decode: ${(error as Error).message}`, { cause: error });
  }
  return validateEnvelope(envelope, maxPayloadBytes);
}

const KIND_TO_ENDPOINT: Record<Destination["kind"], EndpointKind> = {
  role: EndpointKind.ROLE,
  team: EndpointKind.TEAM,
  foreign: EndpointKind.FOREIGN,
};

export function endpointOf(destination: Destination): { kind: EndpointKind; id: string } {
  return { kind: KIND_TO_ENDPOINT[destination.kind], id: destination.id };
}

export const COORDINATOR_ENDPOINT = { kind: EndpointKind.COORDINATOR, id: "coordinator" } as const;

/** JSON payload helpers: payloads are UTF-8 JSON unless a content type says otherwise. */
const encoder = new TextEncoder();
const decoder = new TextDecoder();
export const JSON_CONTENT_TYPE = "application/json";
/**
 * A CONTROL envelope telling a tenant's shard owner to apply `task_started` (src/tasks/start-envelope.ts).
 * Named here because the bus verifier decides on it: only a starting identity may send one.
 */
export const TASK_STARTED_CONTENT_TYPE = "application/vnd.switchyard.task-started";

export function jsonPayload(value: unknown): { data: Uint8Array; contentType: string } {
  return { data: encoder.encode(JSON.stringify(value ?? null)), contentType: JSON_CONTENT_TYPE };
}

export function readJsonPayload(envelope: Envelope): unknown {
  const data = envelope.payload?.data;
  if (!data || data.byteLength === 0) return null;
  try {
    return JSON.parse(decoder.decode(data));
  } catch (error) {
    throw malformed(`payload is not JSON: ${(error as Error).message}`, { envelopeId: envelope.id });
  }
}

export function describeEndpoint(endpoint: Endpoint | undefined): string {
  if (!endpoint) return "unknown";
  const kind = EndpointKind[endpoint.kind]?.toLowerCase() ?? "unknown";
  return `${kind}:${endpoint.id}`;
}
