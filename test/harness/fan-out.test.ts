import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { EndpointKind, EnvelopeKind, ResultStatus, type Envelope } from "../../src/bus/codec.js";
import { ErrorCode } from "../../src/errors.js";
import type { HarnessFlags } from "../../src/flags/flag-types.js";
import type { Handler, Work } from "../../src/harness/types.js";
import { createBusFixture, json, replyEnvelope, runOne, workEnvelope, type BusFixture } from "./fixtures.js";

let fx: BusFixture;
beforeEach(async () => {
  fx = await createBusFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

const run = (handler: Handler, incoming: Envelope): Promise<Envelope> => runOne(fx, incoming, { handler });

/** Runs `handler` on `incoming` and returns the RESULT error it produced (failing when it produced anything else). */
async function failure(handler: Handler, incoming: Envelope = workEnvelope()): Promise<NonNullable<Envelope["error"]>> {
  const sent = await run(handler, incoming);
  expect(sent.kind).toBe(EnvelopeKind.RESULT);
  expect(sent.status).toBe(ResultStatus.ERROR);
  return sent.error!;
}

/** A REPLY that leaves `outstanding` still awaited. */
const replyAwaiting = (outstanding: string[], extra: Parameters<typeof replyEnvelope>[0] = {}): Envelope =>
  replyEnvelope({ correlationId: "c1", outstanding, ...extra });

describe("fan-out: ctx.delegateAll", () => {
  it("asks every destination in one QUERY to the coordinator, with ids given or generated and the turn echoed", async () => {
    const work = workEnvelope({ depth: 1, attempt: 2, turn: 5 });
    const sent = await run((_w, ctx) => {
      ctx.usage({ cost: 0.5 });
      return ctx.delegateAll(
        [
          { to: "role:analyst", payload: { topic: "tides" }, correlationId: "c1" },
          { to: "team:ops", payload: "status?" },
          { to: "foreign:weather", payload: { at: "harbour" }, correlationId: "c3" },
        ],
        { state: { asked: 3 } },
      );
    }, work);

    expect(sent.kind).toBe(EnvelopeKind.QUERY);
    expect(sent.destination).toMatchObject({ kind: EndpointKind.COORDINATOR });
    expect(sent.replyTo).toMatchObject({ taskId: work.taskId, stepId: work.stepId, attempt: 2 });
    expect(sent.correlationId).toBe("");
    expect(sent.delegationDepth).toBe(1);
    expect(sent.turn).toBe(5);
    expect(sent.usage?.cost).toBeCloseTo(0.5);
    const payload = json(sent) as { queries: Array<{ correlationId: string }> };
    expect(payload).toEqual({
      queries: [
        { to: "role:analyst", correlationId: "c1", query: { topic: "tides" } },
        { to: "team:ops", correlationId: expect.any(String), query: "status?" },
        { to: "foreign:weather", correlationId: "c3", query: { at: "harbour" } },
      ],
      state: { asked: 3 },
      turn: 5,
    });
    expect(payload.queries[1]!.correlationId).toMatch(/^[0-9a-f-]{36}$/);
    // One QUERY for the three sub-queries; runOne returned after the WORK was acknowledged, so all is out.
    expect((await fx.bus.stats(COORDINATOR_STREAM, "observer")).length).toBe(1);
  });

  it("refuses an empty list, pointing at ctx.awaitMore", async () => {
    const error = await failure((_w, ctx) => ctx.delegateAll([]));
    expect(error).toMatchObject({ code: ErrorCode.InvalidArgument, retryable: false });
    expect(error.message).toMatch(/at least one sub-query.*ctx\.awaitMore/);
  });

  it("names the sub-query whose destination is not valid", async () => {
    const error = await failure((_w, ctx) => ctx.delegateAll([{ to: "role:a", payload: 1 }, { to: "analyst", payload: 2 }]));
    expect(error.code).toBe(ErrorCode.InvalidArgument);
    expect(error.message).toContain('queries[1].destination "analyst"');
  });

  it("refuses a correlation id repeated within the call, naming the index and the id", async () => {
    const error = await failure((_w, ctx) =>
      ctx.delegateAll([
        { to: "role:a", payload: 1, correlationId: "same" },
        { to: "role:b", payload: 2, correlationId: "other" },
        { to: "role:c", payload: 3, correlationId: "same" },
      ]),
    );
    expect(error.code).toBe(ErrorCode.InvalidArgument);
    expect(error.message).toMatch(/queries\[2\]\.correlationId "same" is repeated/);
  });

  it("refuses a correlation id still outstanding from an earlier turn, for delegateAll and delegate alike", async () => {
    const viaAll = await failure(
      (_w, ctx) => ctx.delegateAll([{ to: "role:a", payload: 1, correlationId: "fresh" }, { to: "role:b", payload: 2, correlationId: "c2" }]),
      replyAwaiting(["c2", "c3"]),
    );
    expect(viaAll.code).toBe(ErrorCode.InvalidArgument);
    expect(viaAll.message).toMatch(/queries\[1\]\.correlationId "c2" is still awaited/);
    const viaOne = await failure((_w, ctx) => ctx.delegate("role:a", 1, { correlationId: "c3" }), replyAwaiting(["c2", "c3"]));
    expect(viaOne.message).toMatch(/correlationId "c3" is still awaited/);
  });

  it("refuses a correlation id over 200 characters and takes one of exactly 200", async () => {
    const error = await failure((_w, ctx) => ctx.delegateAll([{ to: "role:a", payload: 1, correlationId: "x".repeat(201) }]));
    expect(error.message).toMatch(/queries\[0\]\.correlationId must be a string of 1 to 200 characters/);
    const sent = await run((_w, ctx) => ctx.delegateAll([{ to: "role:a", payload: 1, correlationId: "y".repeat(200) }]), workEnvelope());
    expect(sent.kind).toBe(EnvelopeKind.QUERY);
  });

  it("fails BUS_NOT_ROUTED, sticky, when the route is off; awaitMore asks nothing new and is still allowed", async () => {
    const flags: HarnessFlags = { busEnabled: () => true, harnessEnabled: () => true, busRouted: () => false };
    const refused = await runOne(fx, workEnvelope(), {
      flags,
      handler: (_w, ctx) => {
        try {
          return ctx.delegateAll([{ to: "role:a", payload: 1 }]);
        } catch {
          return { pretended: "nothing happened" };
        }
      },
    });
    expect(refused.error).toMatchObject({ code: ErrorCode.BusNotRouted, retryable: false });
    expect(refused.error?.message).toContain("role:a");

    const waiting = await runOne(fx, replyAwaiting(["c2"]), { flags, handler: (_w, ctx) => ctx.awaitMore({ kept: true }) });
    expect(waiting.kind).toBe(EnvelopeKind.QUERY);
    expect(json(waiting)).toEqual({ queries: [], state: { kept: true }, turn: 3 });
  });
});

describe("fan-out: one marker per turn", () => {
  it("fails the turn when a second marker is created, even when the handler catches that and returns the first", async () => {
    const error = await failure((_w, ctx) => {
      const first = ctx.delegateAll([{ to: "role:a", payload: 1 }]);
      try {
        ctx.delegate("role:b", 2);
      } catch {
        // A handler that swallows the refusal still fails: the coordinator takes one stand-down per turn.
      }
      return first;
    });
    expect(error.code).toBe(ErrorCode.InvalidArgument);
    expect(error.message).toMatch(/ctx\.delegate\(\) called after ctx\.delegateAll\(\)/);
  });

  it("counts awaitMore as a marker too", async () => {
    const error = await failure((_w, ctx) => {
      ctx.awaitMore({ a: 1 });
      return ctx.delegateAll([{ to: "role:a", payload: 1 }]);
    }, replyAwaiting(["c2"]));
    expect(error.message).toMatch(/ctx\.delegateAll\(\) called after ctx\.awaitMore\(\)/);
  });

  it("fails the turn on a marker this turn's ctx did not create", async () => {
    let kept: unknown;
    await run((_w, ctx) => {
      kept = ctx.delegate("role:a", 1);
      return { first: true };
    }, workEnvelope());
    const error = await failure(() => kept);
    expect(error.code).toBe(ErrorCode.InvalidArgument);
    expect(error.message).toMatch(/did not create/);
  });
});

describe("fan-out: ctx.awaitMore and work.resume.outstanding", () => {
  it("hands the REPLY's outstanding ids to the handler, and reads anything but a list of strings as none", async () => {
    const seen: Work[] = [];
    const record: Handler = (w) => {
      seen.push(w);
      return { ok: true };
    };
    await run(record, replyAwaiting(["c2", "c3"]));
    await run(record, replyAwaiting([], { outstanding: ["c2", 3] }));
    await run(record, replyAwaiting([], { outstanding: "c2" }));
    expect(seen.map((w) => w.resume?.outstanding)).toEqual([["c2", "c3"], [], []]);
    expect(seen[0]!.resume!.reply.correlationId).toBe("c1");
  });

  it("keeps waiting: a QUERY with no sub-queries, the new checkpoint and the turn", async () => {
    const sent = await run((w, ctx) => {
      const seenSoFar = (w.resume!.state as { seen: string[] }).seen;
      return ctx.awaitMore({ seen: [...seenSoFar, w.resume!.reply.correlationId] });
    }, replyAwaiting(["c2"], { state: { seen: [] }, turn: 6, attempt: 2 }));
    expect(sent.kind).toBe(EnvelopeKind.QUERY);
    expect(sent.destination).toMatchObject({ kind: EndpointKind.COORDINATOR });
    expect(sent.replyTo).toMatchObject({ attempt: 2 });
    expect(sent.turn).toBe(6);
    expect(json(sent)).toEqual({ queries: [], state: { seen: ["c1"] }, turn: 6 });
  });

  it("refuses awaitMore with nothing delegated yet, and after the last reply", async () => {
    const fresh = await failure((_w, ctx) => ctx.awaitMore({}), workEnvelope());
    expect(fresh).toMatchObject({ code: ErrorCode.InvalidArgument });
    expect(fresh.message).toMatch(/nothing was delegated yet/);
    const last = await failure((_w, ctx) => ctx.awaitMore({}), replyAwaiting([]));
    expect(last.message).toMatch(/no reply is outstanding.*return the step's output/);
  });
});

describe("the turn on RESULT envelopes", () => {
  it("echoes the incoming work's turn on ok and error RESULTs", async () => {
    const ok = await run(() => ({ done: true }), workEnvelope({ turn: 7 }));
    expect(ok).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK, turn: 7 });
    const failed = await run(() => {
      throw new Error("boom");
    }, replyEnvelope({ turn: 9 }));
    expect(failed).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.ERROR, turn: 9 });
  });

  it("echoes turn 0, the first turn, rather than leaving it out", async () => {
    const ok = await run(() => "first", workEnvelope({ turn: 0 }));
    expect(ok.turn).toBe(0);
  });

  it("leaves the turn out when the incoming envelope could not be read", async () => {
    const sent = await run(() => "never runs", workEnvelope({ payload: ["not", "an", "object"] }));
    expect(sent.error?.code).toBe(ErrorCode.MalformedEnvelope);
    expect(sent.turn).toBeUndefined();
  });

  it("keeps the turn on the fallback RESULT when the bus refuses the outcome", async () => {
    // A harness cap above the bus's (64 KiB in the fixture) leaves the refusal to the bus at publish.
    const sent = await runOne(fx, workEnvelope({ turn: 4 }), { maxPayloadBytes: 1_000_000, handler: () => "o".repeat(100 * 1024) });
    expect(sent.error?.code).toBe(ErrorCode.PayloadTooLarge);
    expect(sent.turn).toBe(4);
  });
});
