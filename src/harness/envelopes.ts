/**
 * The harness side of the wire protocol: reading WORK and REPLY envelopes into `Work`, and building the RESULT,
 * QUERY and CONTROL envelopes a turn sends to the coordinator.
 *
 * Every outgoing envelope gets a fresh id, keeps the incoming org/task/step/attempt (for a REPLY that is the
 * origin step's) and copies the trace context; the coordinator dedupes by step state, not by our ids.
 */
import { randomUUID } from "node:crypto";
import { answerInbox } from "../bus/shards.js";
import {
  COORDINATOR_ENDPOINT,
  EndpointKind,
  EnvelopeKind,
  ResultStatus,
  createEnvelope,
  endpointOf,
  jsonPayload,
  readJsonPayload,
  type Envelope,
  type EnvelopeInit,
} from "../bus/codec.js";
import { formatDestination } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { ErrorInfo } from "./error-info.js";
import type { Delegation, Reply, Work } from "./types.js";

/** Who the harness speaks as: its role or team queue. */
export interface HarnessSource {
  kind: EndpointKind.ROLE | EndpointKind.TEAM;
  id: string;
}

// The plain-object half of the init union: spreadable, unlike a ready-made Envelope message.
type PlainEnvelopeInit = Exclude<EnvelopeInit, Envelope>;

export interface TurnUsage {
  cost: number;
  inputTokens: number;
  outputTokens: number;
  durationMs: number;
}

function malformed(envelope: Envelope, message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.MalformedEnvelope, message, { details: { envelopeId: envelope.id } });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function payloadObject(envelope: Envelope, what: string): Record<string, unknown> {
  const payload = readJsonPayload(envelope);
  if (!isRecord(payload)) throw malformed(envelope, `${what} payload must be a JSON object`);
  return payload;
}

/** The coordinator's turn number, echoed on the turn's QUERY and RESULT so an outcome of an old turn is recognised as stale. */
function turnOf(payload: Record<string, unknown>): number {
  const turn = payload.turn;
  return typeof turn === "number" && Number.isInteger(turn) && turn >= 0 ? turn : 0;
}

/** `{kind, display}` of the task's reply address, as the coordinator put it in the payload; null when absent or odd. */
function replyToOf(payload: Record<string, unknown>): Work["replyTo"] {
  const r = payload.replyTo;
  if (!isRecord(r) || typeof r.kind !== "string" || typeof r.display !== "string") return null;
  return { kind: r.kind as NonNullable<Work["replyTo"]>["kind"], display: r.display };
}

function baseWork(envelope: Envelope): Omit<Work, "input" | "depth" | "turn" | "replyTo"> {
  return {
    orgId: envelope.orgId,
    taskId: envelope.taskId,
    stepId: envelope.stepId,
    attempt: envelope.attempt,
    envelopeId: envelope.id,
    clearanceFloor: envelope.clearanceFloor,
  };
}

/** WORK payload: `{ "input": <any>, "turn": <n> }`. */
function workFromWork(envelope: Envelope): Work {
  const payload = payloadObject(envelope, "WORK");
  return { ...baseWork(envelope), depth: envelope.delegationDepth, turn: turnOf(payload), input: payload.input ?? null, replyTo: replyToOf(payload) };
}

/**
 * Correlation ids the step still awaits after this REPLY. Anything but an array of strings reads as none: the
 * handler then finishes or asks anew rather than waiting for replies nobody promised.
 */
function outstandingOf(payload: Record<string, unknown>): string[] {
  const ids = payload.outstanding;
  return Array.isArray(ids) && ids.every((id) => typeof id === "string") ? [...(ids as string[])] : [];
}

/**
 * REPLY payload: `{ "input": <origin input>, "state": <checkpoint>, "depth": <origin work depth>, "turn": <n>,
 * "outstanding": [<correlation id>…], "result": <the delegate's output, when it fit> }`.
 */
function workFromReply(envelope: Envelope): Work {
  const payload = payloadObject(envelope, "REPLY");
  let status: Reply["status"];
  if (envelope.status === ResultStatus.OK) status = "ok";
  else if (envelope.status === ResultStatus.ERROR) status = "error";
  else throw malformed(envelope, "REPLY has no status");
  // The REPLY's depth is the query's + 1, and the query's is the origin work's: fall back on that when the
  // payload does not say.
  const originDepth =
    typeof payload.depth === "number" && Number.isInteger(payload.depth) && payload.depth >= 0
      ? payload.depth
      : Math.max(0, envelope.delegationDepth - 1);
  const reply: Reply = {
    status,
    correlationId: envelope.correlationId,
    sourceStepId: envelope.sourceStepId,
    resultRef: envelope.resultRef,
    depth: envelope.delegationDepth,
  };
  if (status === "error") {
    reply.error = { code: envelope.error?.code || ErrorCode.Internal, message: envelope.error?.message ?? "" };
  }
  return {
    ...baseWork(envelope),
    depth: originDepth,
    turn: turnOf(payload),
    input: payload.input ?? null,
    replyTo: replyToOf(payload),
    resume: { state: payload.state ?? null, reply, outstanding: outstandingOf(payload) },
  };
}

/** The delegate output a REPLY carries (`result`, beside its `resultRef`), when the coordinator could fit it in. */
export interface CarriedResult {
  ref: string;
  value: unknown;
}

/** The output carried in a REPLY's payload; undefined for a WORK, an error REPLY, or one whose output did not fit. */
export function carriedResultOf(envelope: Envelope): CarriedResult | undefined {
  if (envelope.kind !== EnvelopeKind.REPLY || envelope.status !== ResultStatus.OK || envelope.resultRef === "") return undefined;
  const payload = readJsonPayload(envelope);
  if (!isRecord(payload) || !Object.hasOwn(payload, "result")) return undefined;
  return { ref: envelope.resultRef, value: payload.result };
}

/** Reads a WORK or REPLY into the handler's `Work`; throws MALFORMED_ENVELOPE when its payload is unusable. */
export function workFromEnvelope(envelope: Envelope): Work {
  if (envelope.kind === EnvelopeKind.WORK) return workFromWork(envelope);
  if (envelope.kind === EnvelopeKind.REPLY) return workFromReply(envelope);
  throw malformed(envelope, `the harness does not handle ${EnvelopeKind[envelope.kind] ?? envelope.kind} envelopes`);
}

/** Whether the harness runs a handler for this kind; anything else is dead-lettered. */
export function isHandledKind(kind: EnvelopeKind): boolean {
  return kind === EnvelopeKind.WORK || kind === EnvelopeKind.REPLY;
}

/** JSON-encodes a value for a payload, refusing what does not serialise or exceeds the cap. */
export function encodeJsonPayload(value: unknown, maxPayloadBytes: number, what: string): { data: Uint8Array; contentType: string } {
  let payload: { data: Uint8Array; contentType: string };
  try {
    payload = jsonPayload(value);
  } catch (error) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `${what} is not JSON-serialisable: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (payload.data.byteLength > maxPayloadBytes) {
    throw new SwitchyardError(
      ErrorCode.PayloadTooLarge,
      `${what} is ${payload.data.byteLength} bytes as JSON, over the ${maxPayloadBytes}-byte limit`,
      { details: { size: payload.data.byteLength, limit: maxPayloadBytes } },
    );
  }
  return payload;
}

function usageInit(usage: TurnUsage): PlainEnvelopeInit["usage"] {
  return {
    cost: usage.cost,
    inputTokens: BigInt(Math.round(usage.inputTokens)),
    outputTokens: BigInt(Math.round(usage.outputTokens)),
    durationMs: BigInt(Math.max(0, Math.round(usage.durationMs))),
  };
}

function outgoing(incoming: Envelope, source: HarnessSource, kind: EnvelopeKind, nowMs: number): PlainEnvelopeInit {
  const init: PlainEnvelopeInit = {
    id: randomUUID(),
    orgId: incoming.orgId,
    taskId: incoming.taskId,
    stepId: incoming.stepId,
    attempt: incoming.attempt,
    kind,
    source: { kind: source.kind, id: source.id },
    destination: { kind: COORDINATOR_ENDPOINT.kind, id: answerInbox(incoming) },
    createdAtMs: BigInt(nowMs),
  };
  if (incoming.trace) init.trace = { traceparent: incoming.trace.traceparent, tracestate: incoming.trace.tracestate };
  return init;
}

/** `turn` is the incoming work's turn; undefined when the incoming envelope could not be read (then unchecked). */
function turnField(turn: number | undefined): Pick<PlainEnvelopeInit, "turn"> {
  return turn === undefined ? {} : { turn };
}

export function resultOkEnvelope(
  incoming: Envelope,
  source: HarnessSource,
  payload: { data: Uint8Array; contentType: string },
  usage: TurnUsage,
  turn: number,
  nowMs: number,
): Envelope {
  return createEnvelope({
    ...outgoing(incoming, source, EnvelopeKind.RESULT, nowMs),
    status: ResultStatus.OK,
    payload,
    usage: usageInit(usage),
    turn,
  });
}

export function resultErrorEnvelope(
  incoming: Envelope,
  source: HarnessSource,
  error: ErrorInfo,
  usage: TurnUsage,
  turn: number | undefined,
  nowMs: number,
): Envelope {
  return createEnvelope({
    ...outgoing(incoming, source, EnvelopeKind.RESULT, nowMs),
    status: ResultStatus.ERROR,
    error: { code: error.code, message: error.message, retryable: error.retryable },
    usage: usageInit(usage),
    ...turnField(turn),
  });
}

/**
 * The QUERY payload: each sub-query with its destination as text and its correlation id, the checkpoint, and the
 * turn that stood down. `queries` is empty for `ctx.awaitMore`. A single sub-query keeps the form coordinators
 * read before fan-out (`{query, state, turn}`, the destination and correlation id on the envelope), so a plain
 * `ctx.delegate` works whichever version the coordinators run during an upgrade.
 */
export function queryPayload(delegation: Delegation, turn: number): unknown {
  const single = singleQuery(delegation);
  if (single) return { query: single.payload, state: delegation.state, turn };
  return {
    queries: delegation.queries.map((q) => ({ to: formatDestination(q.destination), correlationId: q.correlationId, query: q.payload })),
    state: delegation.state,
    turn,
  };
}

function singleQuery(delegation: Delegation): Delegation["queries"][number] | undefined {
  return delegation.queries.length === 1 ? delegation.queries[0] : undefined;
}

/**
 * The QUERY a turn that stands down emits: reply_to names this step attempt, the depth is the work's own, and the
 * payload (`queryPayload`) carries the sub-queries with the checkpoint so the coordinator can hand the checkpoint
 * back in each REPLY. Addressed to the coordinator (which routes each sub-query as its own hop), or, for a single
 * sub-query, to its destination as before fan-out. The turn's usage rides along so cost spent before standing down
 * is accounted.
 */
export function queryEnvelope(
  incoming: Envelope,
  source: HarnessSource,
  work: Pick<Work, "depth" | "turn">,
  delegation: Delegation,
  payload: { data: Uint8Array; contentType: string },
  usage: TurnUsage,
  nowMs: number,
): Envelope {
  const single = singleQuery(delegation);
  return createEnvelope({
    ...outgoing(incoming, source, EnvelopeKind.QUERY, nowMs),
    ...(single ? { destination: endpointOf(single.destination), correlationId: single.correlationId } : {}),
    clearanceFloor: incoming.clearanceFloor,
    replyTo: { taskId: incoming.taskId, stepId: incoming.stepId, attempt: incoming.attempt },
    delegationDepth: work.depth,
    payload,
    usage: usageInit(usage),
    turn: work.turn,
  });
}

/** A `ctx.reply`: the words and the idempotency key; the envelope's id is the request id the outcome is found by. */
export function replyEnvelope(incoming: Envelope, source: HarnessSource, text: string, idempotencyKey: string, nowMs: number): Envelope {
  return createEnvelope({
    ...outgoing(incoming, source, EnvelopeKind.CONTROL, nowMs),
    payload: jsonPayload({ type: "reply", text, idempotencyKey }),
  });
}

export function heartbeatEnvelope(incoming: Envelope, source: HarnessSource, nowMs: number): Envelope {
  return createEnvelope({
    ...outgoing(incoming, source, EnvelopeKind.CONTROL, nowMs),
    payload: jsonPayload({ type: "heartbeat" }),
  });
}
