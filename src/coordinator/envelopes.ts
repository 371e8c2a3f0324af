/**
 * Translation from the wire (protobuf envelopes) to the coordinator's plain events. Inbound envelopes are
 * untrusted: anything that does not fit is refused with MALFORMED_ENVELOPE. (The way out, an envelope spec to the
 * bytes the outbox holds, is the phase writer's: store/engine/postgres-phase-writer.ts.)
 */
import { hash as oneShotHash } from "node:crypto";
import { isUuid, MAX_CORRELATION_ID_CHARS, parseDestination } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { EnvelopeKind, ResultStatus, TASK_STARTED_CONTENT_TYPE, describeEndpoint, type Envelope } from "../bus/codec.js";
import type { StarterSender } from "../bus/auth/bus-auth.js";
import { isNotSentResultId } from "../foreign/foreign-result.js";
import { MAX_REPLY_KEY_CHARS } from "../replies/reply-key.js";
import { startEventId, type CoordinatorEvent, type EventSender } from "../core/model.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function sha256Hex(data: string | Uint8Array): string {
  return oneShotHash("sha256", data, "hex");
}

/** Ids derived from a seed: the same event always produces the same envelope and approval ids. */
export function derivedIdSource(seed: string): () => string {
  let n = 0;
  return () => {
    const h = oneShotHash("sha256", `${seed}\u0000${n++}`, "hex");
    // Format as an RFC 4122 variant, version 8 (custom) UUID.
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
}

export interface InboundEvent {
  orgId: string;
  taskId: string;
  event: CoordinatorEvent;
}

function malformed(envelope: Envelope, message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.MalformedEnvelope, message, { details: { envelopeId: envelope.id } });
}

function payloadJson(envelope: Envelope): { text: string; value: unknown } {
  const data = envelope.payload?.data;
  if (!data || data.byteLength === 0) return { text: "null", value: null };
  const text = decoder.decode(data);
  try {
    return { text, value: JSON.parse(text) };
  } catch {
    throw malformed(envelope, "payload is not JSON");
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Turns an envelope from the coordinator's inbox into an event; throws MALFORMED_ENVELOPE when it cannot. `from`
 * is who the envelope's MAC proves sent it (src/bus/auth/): the only identity the event carries. A task start
 * (start-envelope.ts) is accepted only from a starting identity (the gateway), which may send nothing else.
 */
export function envelopeToEvent(envelope: Envelope, from: EventSender | StarterSender): InboundEvent {
  if (!isUuid(envelope.taskId)) throw malformed(envelope, `task_id ${JSON.stringify(envelope.taskId)} is not a UUID`);
  const base = { orgId: envelope.orgId, taskId: envelope.taskId };
  if (envelope.kind === EnvelopeKind.CONTROL && envelope.payload?.contentType === TASK_STARTED_CONTENT_TYPE) {
    if (from.kind !== "starter" && from.kind !== "coordinator") {
      throw malformed(envelope, `a task start from ${from.kind === "queue" ? from.endpoint : from.kind}: only the gateway starts tasks`);
    }
    return { ...base, event: { type: "task_started", eventId: startEventId(envelope.taskId) } };
  }
  if (from.kind === "starter") throw malformed(envelope, `${from.identity} sent a ${EnvelopeKind[envelope.kind] ?? envelope.kind} envelope: it sends only task starts`);
  // A worker's envelope id becomes its event id, and event ids share one dedupe table with the ids the coordinator
  // derives itself (`start:<task>`, …): an id in any other shape could take one of those first and shadow it.
  if (from.kind === "queue" && !isUuid(envelope.id)) throw malformed(envelope, `envelope id ${JSON.stringify(envelope.id.slice(0, 80))} from ${from.endpoint} is not a UUID`);
  const sender: EventSender = from;
  switch (envelope.kind) {
    case EnvelopeKind.RESULT: {
      const ok = envelope.status === ResultStatus.OK;
      if (!ok && envelope.status !== ResultStatus.ERROR) throw malformed(envelope, "RESULT has no status");
      const payload = payloadJson(envelope);
      const cost = envelope.usage?.cost ?? 0;
      if (!Number.isFinite(cost) || cost < 0) throw malformed(envelope, "RESULT usage cost must be a finite number >= 0");
      return {
        ...base,
        event: {
          type: "result",
          eventId: envelope.id,
          stepId: envelope.stepId,
          attempt: envelope.attempt,
          sender,
          ...(envelope.turn !== undefined ? { turn: envelope.turn } : {}),
          ok,
          output: ok ? payload.value : null,
          error: ok
            ? null
            : {
                code: envelope.error?.code || "HANDLER_FAILED",
                message: envelope.error?.message || "worker reported an error",
                retryable: envelope.error?.retryable ?? true,
              },
          cost,
          payloadHash: sha256Hex(envelope.payload?.data ?? new Uint8Array()),
          // Only the gateway's foreign path writes such ids, and only its MAC proves a gateway sender.
          ...(!ok && sender.kind === "gateway" && isNotSentResultId(envelope.id) ? { undelivered: true } : {}),
          // Same trust: only the gateway prices foreign hops. Bounded so a bad value cannot bloat the audit reason.
          ...(sender.kind === "gateway" && envelope.usage?.pricedBy ? { pricedBy: envelope.usage.pricedBy.slice(0, 40) } : {}),
        },
      };
    }
    case EnvelopeKind.QUERY: {
      const replyTo = envelope.replyTo;
      if (!replyTo || replyTo.taskId !== envelope.taskId || replyTo.stepId !== envelope.stepId) {
        throw malformed(envelope, "QUERY reply_to must name the origin task and step");
      }
      const spent = envelope.usage?.cost ?? 0;
      if (!Number.isFinite(spent) || spent < 0) throw malformed(envelope, "QUERY usage cost must be a finite number >= 0");
      const payload = payloadJson(envelope).value;
      if (!isObject(payload)) throw malformed(envelope, "QUERY payload must be an object {queries, state, turn}");
      const turn = payload.turn;
      if (typeof turn !== "number" || !Number.isInteger(turn) || turn < 0) {
        throw malformed(envelope, "QUERY payload.turn must echo the turn number of the WORK or REPLY being handled");
      }
      return {
        ...base,
        event: {
          type: "query",
          eventId: envelope.id,
          originStepId: replyTo.stepId,
          originAttempt: replyTo.attempt,
          sender,
          queries: queriesOf(envelope, payload),
          depth: envelope.delegationDepth,
          turn,
          cost: spent,
          state: payload.state ?? null,
        },
      };
    }
    case EnvelopeKind.CONTROL: {
      const payload = payloadJson(envelope).value;
      if (isObject(payload) && payload.type === "heartbeat") {
        return { ...base, event: { type: "heartbeat", eventId: envelope.id, stepId: envelope.stepId, attempt: envelope.attempt, sender } };
      }
      if (isObject(payload) && payload.type === "reply") {
        // A worker's `ctx.reply`: only the words and a key. Nothing here may name where or as whom.
        const { text, idempotencyKey } = payload;
        if (typeof text !== "string") throw malformed(envelope, "CONTROL reply: text must be a string");
        if (typeof idempotencyKey !== "string" || idempotencyKey === "" || idempotencyKey.length > MAX_REPLY_KEY_CHARS) {
          throw malformed(envelope, `CONTROL reply: idempotencyKey must be a string of 1 to ${MAX_REPLY_KEY_CHARS} characters`);
        }
        return {
          ...base,
          event: { type: "reply_request", eventId: envelope.id, stepId: envelope.stepId, attempt: envelope.attempt, sender, text, idempotencyKey, requestId: envelope.id },
        };
      }
      throw malformed(envelope, "CONTROL envelope is not a heartbeat or a reply");
    }
    default:
      throw malformed(envelope, `the coordinator does not accept ${EnvelopeKind[envelope.kind] ?? envelope.kind} envelopes`);
  }
}

type SubQueries = Extract<CoordinatorEvent, { type: "query" }>["queries"];

/**
 * The sub-queries of a QUERY: the fan-out form (`payload.queries`, any number, none = keep waiting) or the older
 * single form (the envelope's destination and correlation id, `payload.query`).
 */
function queriesOf(envelope: Envelope, payload: Record<string, unknown>): SubQueries {
  if (payload.queries === undefined) {
    const destination = envelope.destination ? describeEndpoint(envelope.destination) : "";
    if (!parseDestination(destination)) throw malformed(envelope, `QUERY destination ${destination} is not a role, team or foreign endpoint`);
    return [{ destination, correlationId: checkedCorrelationId(envelope, envelope.correlationId || envelope.id, "QUERY"), query: payload.query ?? null }];
  }
  if (!Array.isArray(payload.queries)) throw malformed(envelope, "QUERY payload.queries must be an array of {to, correlationId, query}");
  return payload.queries.map((entry: unknown, index) => {
    const at = `QUERY payload.queries[${index}]`;
    if (!isObject(entry)) throw malformed(envelope, `${at} must be an object {to, correlationId, query}`);
    if (typeof entry.to !== "string" || !parseDestination(entry.to)) {
      throw malformed(envelope, `${at}.to ${JSON.stringify(entry.to)} is not role:NAME, team:NAME or foreign:KEY`);
    }
    if (typeof entry.correlationId !== "string") throw malformed(envelope, `${at}.correlationId must be a string`);
    return { destination: entry.to, correlationId: checkedCorrelationId(envelope, entry.correlationId, at), query: entry.query ?? null };
  });
}

function checkedCorrelationId(envelope: Envelope, id: string, at: string): string {
  if (id === "" || id.length > MAX_CORRELATION_ID_CHARS) {
    throw malformed(envelope, `${at}: a correlation id must be 1 to ${MAX_CORRELATION_ID_CHARS} characters`);
  }
  return id;
}

export function byteLength(text: string): number {
  return encoder.encode(text).byteLength;
}
