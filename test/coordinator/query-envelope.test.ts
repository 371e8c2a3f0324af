/**
 * Reading a QUERY off the wire (issue 14): the fan-out form (any number of sub-queries, none = keep waiting), the
 * older single form, and the malformed ones, each refused with a message that names what is wrong.
 */
import { describe, expect, it } from "vitest";
import { COORDINATOR_ENDPOINT, EndpointKind, EnvelopeKind, ResultStatus, createEnvelope, jsonPayload, type EnvelopeInit } from "../../src/bus/codec.js";
import { envelopeToEvent } from "../../src/coordinator/envelopes.js";
import { MAX_CORRELATION_ID_CHARS } from "../../src/domain.js";
import type { EventSender } from "../../src/core/model.js";
import { ErrorCode } from "../../src/errors.js";

const TASK = "0b8e4f0c-2a51-4c3f-9d7e-3f1c2b7a9e10";
const WORKER: EventSender = { kind: "queue", endpoint: "role:boss" };

function query(payload: unknown, extra: Partial<Exclude<EnvelopeInit, { $typeName: string }>> = {}) {
  return createEnvelope({
    id: "5d1f3c2e-8a4b-4e6f-9c0d-1a2b3c4d5e6f",
    orgId: "acme",
    taskId: TASK,
    stepId: "plan",
    kind: EnvelopeKind.QUERY,
    source: { kind: EndpointKind.ROLE, id: "boss" },
    destination: { ...COORDINATOR_ENDPOINT },
    attempt: 2,
    replyTo: { taskId: TASK, stepId: "plan", attempt: 2 },
    payload: jsonPayload(payload),
    ...extra,
  });
}

function eventOf(envelope: ReturnType<typeof query>) {
  const { event } = envelopeToEvent(envelope, WORKER);
  if (event.type !== "query") throw new Error(`not a query: ${event.type}`);
  return event;
}

function refusal(envelope: ReturnType<typeof query>): string {
  try {
    envelopeToEvent(envelope, WORKER);
  } catch (error) {
    expect(error).toMatchObject({ code: ErrorCode.MalformedEnvelope });
    return (error as Error).message;
  }
  throw new Error("the envelope was accepted");
}

describe("a QUERY off the wire", () => {
  it("reads the fan-out form: every sub-query in order, the state and the turn", () => {
    const event = eventOf(query({
      queries: [
        { to: "role:analyst", correlationId: "a", query: { topic: "tides" } },
        { to: "foreign:checker", correlationId: "b", query: "check" },
        { to: "team:ops", correlationId: "c" },
      ],
      state: { asked: 3 },
      turn: 4,
    }));
    expect(event).toMatchObject({ originStepId: "plan", originAttempt: 2, turn: 4, state: { asked: 3 } });
    expect(event.queries).toEqual([
      { destination: "role:analyst", correlationId: "a", query: { topic: "tides" } },
      { destination: "foreign:checker", correlationId: "b", query: "check" },
      { destination: "team:ops", correlationId: "c", query: null },
    ]);
  });

  it("reads no sub-queries as keep waiting", () => {
    expect(eventOf(query({ queries: [], state: { n: 1 }, turn: 1 })).queries).toEqual([]);
  });

  it("still reads the single form older harnesses send", () => {
    const event = eventOf(query({ query: { x: 1 }, state: null, turn: 0 }, { destination: { kind: EndpointKind.ROLE, id: "analyst" }, correlationId: "corr" }));
    expect(event.queries).toEqual([{ destination: "role:analyst", correlationId: "corr", query: { x: 1 } }]);
  });

  it("refuses sub-queries it cannot route or match, naming the entry", () => {
    expect(refusal(query({ queries: {}, turn: 0 }))).toMatch(/payload.queries must be an array/);
    expect(refusal(query({ queries: ["role:x"], turn: 0 }))).toMatch(/queries\[0\] must be an object/);
    expect(refusal(query({ queries: [{ to: "role:a", correlationId: "a" }, { to: "https://evil", correlationId: "b" }], turn: 0 }))).toMatch(/queries\[1\]\.to "https:\/\/evil" is not role:NAME/);
    expect(refusal(query({ queries: [{ to: "role:a", correlationId: 7 }], turn: 0 }))).toMatch(/queries\[0\]\.correlationId must be a string/);
    expect(refusal(query({ queries: [{ to: "role:a", correlationId: "" }], turn: 0 }))).toMatch(/1 to 200 characters/);
    expect(refusal(query({ queries: [{ to: "role:a", correlationId: "x".repeat(MAX_CORRELATION_ID_CHARS + 1) }], turn: 0 }))).toMatch(/correlation id/);
    expect(refusal(query({ queries: [], turn: -1 }))).toMatch(/payload.turn must echo/);
    expect(refusal(query({ query: 1, turn: 0 }))).toMatch(/QUERY destination coordinator/);
  });
});

describe("a worker's envelope id", () => {
  it("must be a UUID: any other shape could take an id the coordinator derives itself (start:<task>) and shadow it", () => {
    const shadow = query({ queries: [], turn: 0 }, { id: `start:${TASK}` });
    expect(() => envelopeToEvent(shadow, WORKER)).toThrow(expect.objectContaining({ code: ErrorCode.MalformedEnvelope }));
    expect(refusal(shadow)).toMatch(/envelope id "start:0b8e4f0c-.*" from role:boss is not a UUID/);
    // The gateway writes ids of its own shapes (undelivered foreign results), and its MAC proves it is the gateway.
    expect(envelopeToEvent(shadow, { kind: "gateway", agent: "helper" }).event.type).toBe("query");
  });
});

describe("a RESULT's turn", () => {
  it("is read when the harness echoes it, and absent when it does not", () => {
    const result = (turn?: number) =>
      createEnvelope({
        id: "7e2a4b6c-1d3f-4a5b-8c9d-0e1f2a3b4c5d", orgId: "acme", taskId: TASK, stepId: "plan", kind: EnvelopeKind.RESULT, attempt: 1, status: ResultStatus.OK,
        source: { kind: EndpointKind.ROLE, id: "boss" }, payload: jsonPayload({ ok: 1 }), ...(turn === undefined ? {} : { turn }),
      });
    const turnOf = (turn?: number) => {
      const { event } = envelopeToEvent(result(turn), WORKER);
      return event.type === "result" ? event.turn : "not a result";
    };
    expect(turnOf(3)).toBe(3);
    expect(turnOf(0)).toBe(0);
    expect(turnOf()).toBeUndefined();
  });
});
