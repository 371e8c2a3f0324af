/**
 * What one observation does to a bridge (bridge-transition.ts, pure): a stale whole-task snapshot must not drop
 * newer artifacts, every `completed` status push is confirmed, and any observation of a `pending_send` bridge makes
 * it `dispatched`.
 */
import { describe, expect, it } from "vitest";
import type { BridgeRecord } from "../../../src/store/bridges/bridge-store.js";
import { observe } from "../../../src/foreign/bridge-transition.js";

const CAP = 1 << 20;
const art = (id: string, value: unknown) => ({ artifactId: id, parts: [value] });

function bridge(over: Partial<BridgeRecord> = {}): BridgeRecord {
  const now = new Date();
  return {
    id: "00000000-0000-4000-8000-000000000001", orgId: "acme", taskId: "t", stepId: "b", attempt: 1, agentKey: "helper", dialect: "1.0",
    foreignTaskId: "ft", status: "working", notificationTokenHash: "", tokenKid: "k", request: {}, clearance: 0, artifacts: [], lastState: "working",
    deadlineMs: null, delivery: "push", nextPollAt: null, polls: 0, lateArtifacts: [], createdAt: now, updatedAt: now, resolvedAt: null,
    sentAt: now, sentHash: null, usage: null, pricedBy: null, ...over,
  };
}

describe("bridge transitions", () => {
  it("(4) a non-terminal whole-task snapshot landing after newer pushes merges: no artifact is dropped", () => {
    const b = bridge({ artifacts: [art("a", 1), art("b", 2)] });
    const step = observe(b, { foreignTaskId: "ft", state: "working", artifacts: [art("a", 1)], complete: true }, CAP);
    expect(step.bridge.artifacts).toEqual([art("a", 1), art("b", 2)]);
  });

  it("(4) a terminal whole task is the final list and replaces what pushes collected", () => {
    const b = bridge({ artifacts: [art("a", "partial")] });
    const step = observe(b, { foreignTaskId: "ft", state: "completed", artifacts: [art("a", "whole")], complete: true }, CAP);
    expect(step.outcome).toBe("resumed");
    expect(step.bridge.artifacts).toEqual([art("a", "whole")]);
  });

  it("(5) a completed status push with an artifact already collected is still confirmed with GetTask", () => {
    const b = bridge({ artifacts: [art("a", 1)] });
    const step = observe(b, { foreignTaskId: "ft", state: "completed", artifacts: [] }, CAP);
    expect(step).toMatchObject({ outcome: "updated", pollNow: true, bridge: { status: "working", lastState: "completed" } });
    expect(step.end).toBeUndefined();
  });

  it("(5) a Message answer or a call needs no confirmation", () => {
    expect(observe(bridge({ foreignTaskId: "message:x" }), { foreignTaskId: "message:x", state: "completed", artifacts: [art("m", 1)] }, CAP).outcome).toBe("resumed");
    expect(observe(bridge({ delivery: "call" }), { foreignTaskId: "ft", state: "completed", artifacts: [art("m", 1)] }, CAP).outcome).toBe("resumed");
  });

  it("(1) any observation of a pending_send bridge makes it dispatched (the agent has the task)", () => {
    const pending = bridge({ status: "pending_send", foreignTaskId: null, lastState: null, delivery: null, sentAt: null });
    expect(observe(pending, { foreignTaskId: "ft", state: "completed", artifacts: [] }, CAP)).toMatchObject({ pollNow: true, bridge: { status: "dispatched", foreignTaskId: "ft" } });
    expect(observe(pending, { foreignTaskId: "ft", state: "submitted", artifacts: [] }, CAP).bridge.status).toBe("dispatched");
  });
});
