/**
 * The "nothing reached the agent" fact that lets a FOREIGN step re-send (decide.ts) comes only from a RESULT the
 * gateway's foreign path signed with a `not-sent` id: the same id from anyone else, or on a success, carries nothing.
 */
import { describe, expect, it } from "vitest";
import { EndpointKind, EnvelopeKind, ResultStatus, createEnvelope } from "../../src/bus/codec.js";
import { envelopeToEvent } from "../../src/coordinator/envelopes.js";
import type { EventSender } from "../../src/core/model.js";
import { foreignResultId } from "../../src/foreign/foreign-result.js";

const TASK = "0b8e4f0c-2a51-4c3f-9d7e-3f1c2b7a9e10";

function resultEnvelope(id: string, ok: boolean) {
  return createEnvelope({
    id,
    orgId: "acme",
    taskId: TASK,
    stepId: "b",
    kind: EnvelopeKind.RESULT,
    source: { kind: EndpointKind.FOREIGN, id: "helper" },
    attempt: 1,
    status: ok ? ResultStatus.OK : ResultStatus.ERROR,
    ...(ok ? {} : { error: { code: "FOREIGN_SEND_FAILED", message: "card unreachable", retryable: true } }),
  });
}

function undeliveredOf(id: string, sender: EventSender, ok = false): unknown {
  const { event } = envelopeToEvent(resultEnvelope(id, ok), sender);
  return event.type === "result" ? event.undelivered : "not a result";
}

describe("a FOREIGN result's undelivered fact", () => {
  const gateway: EventSender = { kind: "gateway", agent: "helper" };
  it("is set for a failed not-sent result from the gateway", () => {
    expect(undeliveredOf(foreignResultId("br-1", "not-sent"), gateway)).toBe(true);
  });
  it("is not set for a send that may have reached the agent, for the agent's own answer, or on success", () => {
    expect(undeliveredOf(foreignResultId("br-1", "send-failed"), gateway)).toBeUndefined();
    expect(undeliveredOf(foreignResultId("br-1", "final"), gateway)).toBeUndefined();
    expect(undeliveredOf(foreignResultId("br-1", "not-sent"), gateway, true)).toBeUndefined();
  });
  it("is not set when anyone but the gateway uses such an id; a worker's is refused whole (its ids are UUIDs)", () => {
    expect(() => undeliveredOf(foreignResultId("br-1", "not-sent"), { kind: "queue", endpoint: "role:one" })).toThrow(/from role:one is not a UUID/);
    expect(undeliveredOf(foreignResultId("br-1", "not-sent"), { kind: "coordinator" })).toBeUndefined();
  });
});
