import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { EndpointKind, EnvelopeKind, ResultStatus, type Envelope } from "../../src/bus/codec.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { HARNESS_GROUP } from "../../src/harness/harness.js";
import type { Handler } from "../../src/harness/types.js";
import { createBusFixture, json, waitFor, workEnvelope, type BusFixture } from "./fixtures.js";

let fx: BusFixture;
beforeEach(async () => {
  fx = await createBusFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

async function runOne(handler: Handler, work: Envelope, options: { maxPayloadBytes?: number } = {}): Promise<Envelope> {
  const harness = fx.harness({ handler, ...options });
  const running = harness.start();
  await fx.publish("role:writer", work);
  const [sent] = await fx.sent(1);
  await waitFor(async () => (await fx.bus.stats("role:writer", HARNESS_GROUP)).pending === 0, 5_000, "the WORK to be acked");
  await harness.close();
  await running;
  expect(sent, "the harness sent nothing to the coordinator").toBeDefined();
  return sent!;
}

function expectReplyAddressing(sent: Envelope, work: Envelope): void {
  expect(sent.id).not.toBe(work.id);
  expect(sent.id).toMatch(/^[0-9a-f-]{36}$/);
  expect(sent.orgId).toBe(work.orgId);
  expect(sent.taskId).toBe(work.taskId);
  expect(sent.stepId).toBe(work.stepId);
  expect(sent.attempt).toBe(work.attempt);
  expect(sent.source).toMatchObject({ kind: EndpointKind.ROLE, id: "writer" });
  expect(sent.destination).toMatchObject({ kind: EndpointKind.COORDINATOR, id: "coordinator" });
  expect(sent.trace?.traceparent).toBe(work.trace?.traceparent);
  expect(sent.createdAtMs).toBeGreaterThan(0n);
}

describe("harness turns", () => {
  it("runs the handler on WORK and sends an OK RESULT with the output and summed usage", async () => {
    const work = workEnvelope({ input: { task: { topic: "tides" }, steps: { research: { n: 1 } } }, attempt: 2 });
    const seen: unknown[] = [];
    const sent = await runOne(async (w, ctx) => {
      seen.push(w);
      ctx.usage({ cost: 0.25, inputTokens: 10 });
      ctx.usage({ cost: 0.5, outputTokens: 7 });
      await new Promise((r) => setTimeout(r, 30));
      return { echoed: w.input };
    }, work);

    expect(seen).toEqual([
      expect.objectContaining({ orgId: "org-a", taskId: work.taskId, stepId: "draft", attempt: 2, envelopeId: work.id, depth: 0, clearanceFloor: 2 }),
    ]);
    expect((seen[0] as { resume?: unknown }).resume).toBeUndefined();
    expect(sent.kind).toBe(EnvelopeKind.RESULT);
    expect(sent.status).toBe(ResultStatus.OK);
    expectReplyAddressing(sent, work);
    expect(json(sent)).toEqual({ echoed: { task: { topic: "tides" }, steps: { research: { n: 1 } } } });
    expect(sent.usage?.cost).toBeCloseTo(0.75);
    expect(sent.usage?.inputTokens).toBe(10n);
    expect(sent.usage?.outputTokens).toBe(7n);
    expect(sent.usage?.durationMs).toBeGreaterThanOrEqual(25n);
  });

  it("turns a thrown Error into a retryable HANDLER_FAILED RESULT and acks the WORK", async () => {
    const work = workEnvelope();
    const sent = await runOne(() => {
      throw new Error("model timed out");
    }, work);
    expect(sent.kind).toBe(EnvelopeKind.RESULT);
    expect(sent.status).toBe(ResultStatus.ERROR);
    expect(sent.error).toMatchObject({ code: ErrorCode.HandlerFailed, message: "model timed out", retryable: true });
    expectReplyAddressing(sent, work);
  });

  it("keeps a SwitchyardError's code; INVALID_ARGUMENT is not retryable", async () => {
    const sent = await runOne(() => {
      throw new SwitchyardError(ErrorCode.InvalidArgument, "no topic given");
    }, workEnvelope());
    expect(sent.error).toMatchObject({ code: ErrorCode.InvalidArgument, message: "no topic given", retryable: false });
  });

  it("keeps other SwitchyardError codes and marks them retryable", async () => {
    const sent = await runOne(() => {
      throw new SwitchyardError(ErrorCode.Unavailable, "upstream down");
    }, workEnvelope());
    expect(sent.error).toMatchObject({ code: ErrorCode.Unavailable, retryable: true });
  });

  it("refuses output over maxPayloadBytes with a non-retryable PAYLOAD_TOO_LARGE", async () => {
    const sent = await runOne(() => ({ text: "x".repeat(2_000) }), workEnvelope(), { maxPayloadBytes: 1_000 });
    expect(sent.status).toBe(ResultStatus.ERROR);
    expect(sent.error).toMatchObject({ code: ErrorCode.PayloadTooLarge, retryable: false });
    expect(sent.payload?.data.byteLength ?? 0).toBe(0);
  });

  it("fails output that is not JSON-serialisable with INVALID_ARGUMENT", async () => {
    const sent = await runOne(() => ({ big: 1n }), workEnvelope());
    expect(sent.error).toMatchObject({ code: ErrorCode.InvalidArgument, retryable: false });
  });

  it("sends a null payload when the handler returns nothing", async () => {
    const sent = await runOne(() => undefined, workEnvelope());
    expect(sent.status).toBe(ResultStatus.OK);
    expect(json(sent)).toBeNull();
  });

  it("fails a WORK whose payload is not JSON with a non-retryable MALFORMED_ENVELOPE", async () => {
    const work = workEnvelope();
    work.payload!.data = new TextEncoder().encode("{not json");
    let called = false;
    const sent = await runOne(() => {
      called = true;
    }, work);
    expect(called).toBe(false);
    expect(sent.error).toMatchObject({ code: ErrorCode.MalformedEnvelope, retryable: false });
  });

  it("rejects a usage report with a negative cost and leaves the totals unchanged", async () => {
    const sent = await runOne((_w, ctx) => {
      ctx.usage({ cost: 1 });
      try {
        ctx.usage({ cost: -5, inputTokens: 3 });
      } catch (error) {
        return { refused: (error as SwitchyardError).code };
      }
      return { refused: null };
    }, workEnvelope());
    expect(json(sent)).toEqual({ refused: ErrorCode.InvalidArgument });
    expect(sent.usage?.cost).toBe(1);
    expect(sent.usage?.inputTokens).toBe(0n);
  });

  it("ctx.heartbeat() sends a CONTROL heartbeat for the same step before the RESULT", async () => {
    const harness = fx.harness({
      handler: async (_w, ctx) => {
        await ctx.heartbeat();
        return "done";
      },
    });
    const running = harness.start();
    const work = workEnvelope({ attempt: 3 });
    await fx.publish("role:writer", work);
    const sent = await fx.sent(2);
    await harness.close();
    await running;
    expect(sent.map((e) => e.kind)).toEqual([EnvelopeKind.CONTROL, EnvelopeKind.RESULT]);
    const heartbeat = sent[0]!;
    expect(json(heartbeat)).toEqual({ type: "heartbeat" });
    expectReplyAddressing(heartbeat, work);
  });

  it("readResult without a result reader fails FAILED_PRECONDITION", async () => {
    const sent = await runOne(async (_w, ctx) => ctx.readResult("step:00000000-0000-0000-0000-000000000000/x"), workEnvelope());
    expect(sent.error).toMatchObject({ code: ErrorCode.FailedPrecondition, retryable: true });
  });

  it("passes the envelope ids to the handler's scoped logger", async () => {
    const lines: Record<string, unknown>[] = [];
    const { createLogger } = await import("../../src/logger.js");
    const logger = createLogger({
      level: "debug",
      destination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) } as unknown as NodeJS.WritableStream,
    });
    const work = workEnvelope();
    const harness = fx.harness({
      logger,
      handler: (_w, ctx) => {
        ctx.logger.info("inside the handler");
        return 1;
      },
    });
    const running = harness.start();
    await fx.publish("role:writer", work);
    await fx.sent(1);
    await harness.close();
    await running;
    const inside = lines.find((l) => l.msg === "inside the handler");
    expect(inside).toMatchObject({ orgId: "org-a", taskId: work.taskId, stepId: "draft", envelopeId: work.id });
  });

  it("sends nothing anywhere but the coordinator stream", async () => {
    await runOne(() => "ok", workEnvelope());
    const stats = await fx.bus.stats(COORDINATOR_STREAM, "observer");
    expect(stats.length).toBe(1);
  });
});
