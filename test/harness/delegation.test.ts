import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { EndpointKind, EnvelopeKind, ResultStatus, type Envelope } from "../../src/bus/codec.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { HARNESS_GROUP } from "../../src/harness/harness.js";
import type { ResultReader } from "../../src/harness/result-reader.js";
import type { Handler, Work } from "../../src/harness/types.js";
import { createBusFixture, json, replyEnvelope, runOne as runFixture, workEnvelope, type BusFixture } from "./fixtures.js";

let fx: BusFixture;
beforeEach(async () => {
  fx = await createBusFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

/** A stand-in for the step store: results keyed by org and reference (the real PG reader has its own test). */
function memoryReader(results: Record<string, Record<string, unknown>>): ResultReader & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async read(orgId, ref) {
      reads.push(`${orgId} ${ref}`);
      const byRef = results[orgId] ?? {};
      if (!(ref in byRef)) throw new SwitchyardError(ErrorCode.NotFound, `no result ${ref}`);
      return byRef[ref];
    },
  };
}

function runOne(handler: Handler, incoming: Envelope, resultReader?: ResultReader): Promise<Envelope> {
  return runFixture(fx, incoming, { handler, ...(resultReader ? { resultReader } : {}) });
}

describe("delegation", () => {
  it("emits a QUERY to the coordinator with reply_to, the sub-query, the work's depth, turn and checkpoint, and acks the WORK", async () => {
    const work = workEnvelope({ depth: 2, attempt: 3, input: { topic: "tides" } });
    const sent = await runOne((w, ctx) => {
      ctx.usage({ cost: 0.2 });
      return ctx.delegate("role:analyst", { topic: "tides", focus: "moon" }, { correlationId: "ask-1", state: { step: 1, seen: ["a"] } });
    }, work);

    expect(sent.kind).toBe(EnvelopeKind.QUERY);
    // The coordinator routes each sub-query itself; the envelope no longer names the one delegate.
    // One sub-query keeps the form coordinators read before fan-out: addressed to the delegate, id on the envelope.
    expect(sent.destination).toMatchObject({ kind: EndpointKind.ROLE, id: "analyst" });
    expect(sent.source).toMatchObject({ kind: EndpointKind.ROLE, id: "writer" });
    expect(sent.replyTo).toMatchObject({ taskId: work.taskId, stepId: work.stepId, attempt: 3 });
    expect(sent.correlationId).toBe("ask-1");
    expect(sent.delegationDepth).toBe(2);
    expect(sent.turn).toBe(2);
    expect(sent.orgId).toBe(work.orgId);
    expect(sent.taskId).toBe(work.taskId);
    expect(sent.stepId).toBe(work.stepId);
    expect(sent.attempt).toBe(3);
    expect(sent.trace?.traceparent).toBe(work.trace?.traceparent);
    // The turn number from the WORK is echoed so the coordinator can spot a redelivered old QUERY.
    expect(json(sent)).toEqual({ query: { topic: "tides", focus: "moon" }, state: { step: 1, seen: ["a"] }, turn: 2 });
    expect(sent.usage?.cost).toBeCloseTo(0.2);
    const stats = await fx.bus.stats("role:writer", HARNESS_GROUP);
    expect(stats.pending).toBe(0);
  });

  it("generates a correlation id and a null checkpoint when none is given", async () => {
    const sent = await runOne((_w, ctx) => ctx.delegate("team:ops", "status?"), workEnvelope());
    expect(sent.kind).toBe(EnvelopeKind.QUERY);
    expect(json(sent)).toEqual({ query: "status?", state: null, turn: 2 });
    expect(sent.destination).toMatchObject({ kind: EndpointKind.TEAM, id: "ops" });
    expect(sent.correlationId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("fails the turn with INVALID_ARGUMENT when the destination is not valid", async () => {
    const sent = await runOne((_w, ctx) => ctx.delegate("analyst", { topic: "x" }), workEnvelope());
    expect(sent.kind).toBe(EnvelopeKind.RESULT);
    expect(sent.error).toMatchObject({ code: ErrorCode.InvalidArgument, retryable: false });
    expect(sent.error?.message).toContain("analyst");
  });

  it("fails the turn when a Delegation is returned after delegate() was called twice", async () => {
    const sent = await runOne((_w, ctx) => {
      ctx.delegate("role:a", 1);
      return ctx.delegate("role:b", 2);
    }, workEnvelope({ turn: 4 }));
    expect(sent.kind).toBe(EnvelopeKind.RESULT);
    expect(sent.error).toMatchObject({ code: ErrorCode.InvalidArgument, retryable: false });
    expect(sent.error?.message).toMatch(/ctx\.delegate\(\) called after ctx\.delegate\(\).*one ctx\.delegateAll\(\)/);
    expect(sent.turn).toBe(4);
  });

  it("refuses a checkpoint that makes the QUERY too large", async () => {
    const harness = fx.harness({ maxPayloadBytes: 500, handler: (_w, ctx) => ctx.delegate("role:a", "q", { state: "s".repeat(1_000) }) });
    const running = harness.start();
    await fx.publish("role:writer", workEnvelope());
    const [sent] = await fx.sent(1);
    await harness.close();
    await running;
    expect(sent?.kind).toBe(EnvelopeKind.RESULT);
    expect(sent?.error).toMatchObject({ code: ErrorCode.PayloadTooLarge, retryable: false });
    expect(sent?.error?.message).toContain("delegation queries and state");
    expect(sent?.turn).toBe(2);
  });

  it("re-invokes the same handler on REPLY with the original input, the checkpoint and the reply", async () => {
    const taskId = "7f1c8a52-4a8e-4c4b-9a52-2a4c1f0e9b11";
    const reply = replyEnvelope({
      taskId,
      stepId: "research",
      attempt: 2,
      correlationId: "ask-1",
      sourceStepId: "research.d1",
      input: { topic: "tides" },
      state: { step: 1 },
      originDepth: 1,
    });
    const reader = memoryReader({ "org-a": { [`step:${taskId}/research.d1`]: { summary: "moon" } } });
    const seen: Work[] = [];
    const sent = await runOne(async (w, ctx) => {
      seen.push(w);
      const analysis = await ctx.readResult(w.resume!.reply.resultRef);
      return { topic: (w.input as { topic: string }).topic, analysis, state: w.resume!.state };
    }, reply, reader);

    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      orgId: "org-a",
      taskId,
      stepId: "research",
      attempt: 2,
      envelopeId: reply.id,
      depth: 1,
      input: { topic: "tides" },
      resume: {
        state: { step: 1 },
        reply: { status: "ok", correlationId: "ask-1", sourceStepId: "research.d1", resultRef: `step:${taskId}/research.d1`, depth: 2 },
        // A REPLY that says nothing about other sub-queries leaves none outstanding.
        outstanding: [],
      },
    });
    expect(seen[0]!.resume!.reply.error).toBeUndefined();
    expect(reader.reads).toEqual([`org-a step:${taskId}/research.d1`]);
    expect(sent.kind).toBe(EnvelopeKind.RESULT);
    expect(sent.status).toBe(ResultStatus.OK);
    expect(sent.replyTo).toBeUndefined();
    expect(sent).toMatchObject({ taskId, stepId: "research", attempt: 2, turn: 3 });
    expect(json(sent)).toEqual({ topic: "tides", analysis: { summary: "moon" }, state: { step: 1 } });
  });

  it("hands an error REPLY to the handler with the delegate's error", async () => {
    const reply = replyEnvelope({ status: "error", error: { code: "TIMEOUT", message: "analyst took too long" } });
    const seen: Work[] = [];
    const sent = await runOne((w) => {
      seen.push(w);
      return { gaveUp: true };
    }, reply);
    expect(seen[0]?.resume?.reply).toMatchObject({ status: "error", error: { code: "TIMEOUT", message: "analyst took too long" } });
    expect(json(sent)).toEqual({ gaveUp: true });
  });

  it("a resumed turn may delegate again, at the origin's depth and for the origin's step", async () => {
    const reply = replyEnvelope({ stepId: "research", attempt: 1, originDepth: 3, state: { round: 1 } });
    const sent = await runOne((w, ctx) => {
      const round = (w.resume!.state as { round: number }).round;
      return ctx.delegate("role:analyst", { again: true }, { state: { round: round + 1 }, correlationId: "ask-2" });
    }, reply);
    expect(sent.kind).toBe(EnvelopeKind.QUERY);
    expect(sent.delegationDepth).toBe(3);
    expect(sent.turn).toBe(3);
    expect(sent.replyTo).toMatchObject({ taskId: reply.taskId, stepId: "research", attempt: 1 });
    expect(sent.correlationId).toBe("ask-2");
    expect(json(sent)).toEqual({ query: { again: true }, state: { round: 2 }, turn: 3 });
  });

  it("a reader scoped by tenant: reading another tenant's reference fails the turn NOT_FOUND", async () => {
    const taskId = "7f1c8a52-4a8e-4c4b-9a52-2a4c1f0e9b12";
    const reader = memoryReader({ "org-b": { [`step:${taskId}/draft.d1`]: { secret: true } } });
    const sent = await runOne(async (w, ctx) => ctx.readResult(w.resume!.reply.resultRef), replyEnvelope({ orgId: "org-a", taskId }), reader);
    expect(reader.reads).toEqual([`org-a step:${taskId}/draft.d1`]);
    expect(sent.error).toMatchObject({ code: ErrorCode.NotFound });
  });

  it("reads the delegate's output from the REPLY that carries it, with no result reader (a worker without a database)", async () => {
    const taskId = "7f1c8a52-4a8e-4c4b-9a52-2a4c1f0e9b13";
    const reply = replyEnvelope({ taskId, sourceStepId: "draft.d1", result: { summary: "moon", n: [1, 2] } });
    const sent = await runOne(async (w, ctx) => {
      const first = (await ctx.readResult(w.resume!.reply.resultRef)) as { summary: string; n: number[] };
      first.n.push(3);
      // A copy each time: what the handler edited is not what a second read gives.
      return { first, again: await ctx.readResult(w.resume!.reply.resultRef) };
    }, reply);
    expect(sent.status).toBe(ResultStatus.OK);
    expect(json(sent)).toEqual({ first: { summary: "moon", n: [1, 2, 3] }, again: { summary: "moon", n: [1, 2] } });
  });

  it("reads a carried null output as null, and asks the reader for another reply's reference", async () => {
    const taskId = "7f1c8a52-4a8e-4c4b-9a52-2a4c1f0e9b14";
    const reader = memoryReader({ "org-a": { [`step:${taskId}/draft.d0`]: { earlier: true } } });
    const reply = replyEnvelope({ taskId, result: null });
    const sent = await runOne(async (w, ctx) => ({ mine: await ctx.readResult(w.resume!.reply.resultRef), other: await ctx.readResult(`step:${taskId}/draft.d0`) }), reply, reader);
    expect(json(sent)).toEqual({ mine: null, other: { earlier: true } });
    expect(reader.reads).toEqual([`org-a step:${taskId}/draft.d0`]);
  });

  it("fails FAILED_PRECONDITION, naming the reference, when the output did not travel and there is no reader", async () => {
    const taskId = "7f1c8a52-4a8e-4c4b-9a52-2a4c1f0e9b15";
    const sent = await runOne(async (w, ctx) => ctx.readResult(w.resume!.reply.resultRef), replyEnvelope({ taskId }));
    expect(sent.error).toMatchObject({ code: ErrorCode.FailedPrecondition });
    expect(sent.error?.message).toContain(`step:${taskId}/draft.d1`);
    expect(sent.error?.message).toContain("checkpoint state");
  });
});
