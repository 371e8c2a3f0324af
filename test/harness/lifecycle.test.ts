import { testBusAuth } from "../support/bus-auth.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { EndpointKind, EnvelopeKind, ResultStatus, createEnvelope } from "../../src/bus/codec.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { createHarness, HARNESS_GROUP } from "../../src/harness/harness.js";
import { createBusFixture, deferred, json, MAX_PAYLOAD_BYTES, sleep, waitFor, workEnvelope, type BusFixture } from "./fixtures.js";

let fx: BusFixture;
beforeEach(async () => {
  fx = await createBusFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

const pending = async (): Promise<number> => (await fx.bus.stats("role:writer", HARNESS_GROUP)).pending;

describe("harness lifecycle", () => {
  it("never runs more handlers at once than its concurrency", async () => {
    let active = 0;
    let peak = 0;
    const harness = fx.harness({
      concurrency: 3,
      handler: async (w) => {
        active += 1;
        peak = Math.max(peak, active);
        await sleep(80);
        active -= 1;
        return w.input;
      },
    });
    for (let i = 0; i < 10; i++) await fx.publish("role:writer", workEnvelope({ stepId: `s${i}` }));
    const running = harness.start();
    const sent = await fx.sent(10, 10_000);
    await harness.close();
    await running;
    expect(sent).toHaveLength(10);
    expect(new Set(sent.map((e) => e.stepId)).size).toBe(10);
    expect(peak).toBe(3);
    expect(harness.stats).toMatchObject({ completed: 10, inFlight: 0 });
  });

  it("on close() stops reading but lets a running handler finish and send its RESULT", async () => {
    const started = deferred();
    let finished = false;
    let aborted = false;
    const harness = fx.harness({
      shutdownGraceMs: 3_000,
      handler: async (_w, ctx) => {
        started.resolve();
        await sleep(300);
        aborted = ctx.signal.aborted;
        finished = true;
        return "finished";
      },
    });
    const running = harness.start();
    await fx.publish("role:writer", workEnvelope());
    await started.promise;
    await harness.close();
    expect(finished).toBe(true);
    expect(aborted).toBe(false);
    await running;
    const sent = await fx.sent(1);
    expect(sent.map((e) => json(e))).toEqual(["finished"]);
    expect(await pending()).toBe(0);

    // Stopped means stopped: new work stays on the stream.
    await fx.publish("role:writer", workEnvelope());
    await sleep(200);
    expect((await fx.bus.stats("role:writer", HARNESS_GROUP)).length).toBe(2);
    expect(await fx.sent(2, 200)).toHaveLength(1);
    await harness.close(); // idempotent
  });

  it("aborts a handler that outlives the grace, leaves its entry pending, and a second harness completes it", async () => {
    const started = deferred();
    let abortReason: unknown;
    const stubborn = fx.harness({
      consumer: "first",
      shutdownGraceMs: 150,
      handler: (_w, ctx) =>
        new Promise((_resolve, reject) => {
          started.resolve();
          ctx.signal.addEventListener("abort", () => {
            abortReason = ctx.signal.reason;
            reject(ctx.signal.reason);
          });
        }),
    });
    const running = stubborn.start();
    const work = workEnvelope();
    await fx.publish("role:writer", work);
    await started.promise;
    const t0 = Date.now();
    await stubborn.close();
    await running;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    expect(abortReason).toBeInstanceOf(SwitchyardError);
    expect((abortReason as SwitchyardError).code).toBe(ErrorCode.Cancelled);
    expect(stubborn.stats.abandoned).toBe(1);
    await sleep(100);
    expect(await fx.sent(1, 200)).toHaveLength(0);
    expect(await pending()).toBe(1);

    const rescuer = fx.harness({ consumer: "second", reclaimIdleMs: 200, heartbeatMs: 50, handler: (w) => ({ rescued: w.envelopeId }) });
    const rescuing = rescuer.start();
    const sent = await fx.sent(1);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.status).toBe(ResultStatus.OK);
    expect(json(sent[0]!)).toEqual({ rescued: work.id });
    await waitFor(async () => (await pending()) === 0, 5_000, "the reclaimed entry to be acked");
    expect(rescuer.stats.reclaimed).toBe(1);
    await rescuer.close();
    await rescuing;
  });

  it("reclaims an entry a dead consumer read and never acknowledged", async () => {
    const work = workEnvelope();
    await fx.bus.ensureGroup("role:writer", HARNESS_GROUP);
    await fx.publish("role:writer", work);
    const taken = await fx.bus.read({ stream: "role:writer", group: HARNESS_GROUP, consumer: "dead", count: 10, blockMs: 10 });
    expect(taken).toHaveLength(1);

    const harness = fx.harness({ reclaimIdleMs: 200, heartbeatMs: 50, handler: () => "done late" });
    const running = harness.start();
    const sent = await fx.sent(1);
    expect(sent.map((e) => [e.taskId, json(e)])).toEqual([[work.taskId, "done late"]]);
    await waitFor(async () => (await pending()) === 0, 5_000, "the reclaimed entry to be acked");
    expect(harness.stats.reclaimed).toBe(1);
    await harness.close();
    await running;
  });

  it("keeps touching a long turn's entry so no other harness reclaims it", async () => {
    let runs = 0;
    const started = deferred();
    const handler = async (): Promise<string> => {
      runs += 1;
      started.resolve();
      await sleep(800);
      return "long";
    };
    // `a` takes the entry; `b` reclaims anything idle for 300 ms, so only a's touches keep the entry with `a`.
    const a = fx.harness({ consumer: "a", heartbeatMs: 50, handler });
    const runningA = a.start();
    await fx.publish("role:writer", workEnvelope());
    await started.promise;
    const b = fx.harness({ consumer: "b", heartbeatMs: 50, reclaimIdleMs: 300, handler });
    const runningB = b.start();
    const sent = await fx.sent(1);
    await sleep(300);
    expect(runs).toBe(1);
    expect(b.stats.reclaimed).toBe(0);
    expect(await fx.sent(2, 100)).toHaveLength(1);
    expect(sent).toHaveLength(1);
    await Promise.all([a.close(), b.close()]);
    await Promise.all([runningA, runningB]);
  });

  it("dead-letters an envelope kind it does not handle and acks it", async () => {
    const stray = createEnvelope({
      ...{ id: "11111111-1111-4111-8111-111111111111", orgId: "org-a", taskId: "t", stepId: "s" },
      kind: EnvelopeKind.RESULT,
      status: ResultStatus.OK,
      source: { kind: EndpointKind.ROLE, id: "other" },
      destination: { kind: EndpointKind.ROLE, id: "writer" },
    });
    let called = false;
    const harness = fx.harness({
      handler: () => {
        called = true;
      },
    });
    const running = harness.start();
    await fx.publish("role:writer", stray);
    await waitFor(async () => (await fx.bus.listDeadLetters("role:writer")).length === 1, 5_000, "a dead letter");
    const [dead] = await fx.bus.listDeadLetters("role:writer");
    expect(dead!.reason).toMatch(/RESULT/);
    expect(dead!.raw.byteLength).toBeGreaterThan(0);
    expect(await pending()).toBe(0);
    expect(called).toBe(false);
    expect(harness.stats.deadLettered).toBe(1);
    expect((await fx.bus.stats(COORDINATOR_STREAM, "observer")).length).toBe(0);
    await harness.close();
    await running;
  });

  it("stops when its signal aborts", async () => {
    const controller = new AbortController();
    const harness = fx.harness({ signal: controller.signal, handler: () => "x" });
    const running = harness.start();
    await fx.publish("role:writer", workEnvelope());
    await fx.sent(1);
    controller.abort();
    await expect(running).resolves.toBeUndefined();
  });

  it("validates its options", () => {
    const base = { bus: fx.bus, handler: () => 1, maxPayloadBytes: MAX_PAYLOAD_BYTES, reclaimIdleMs: 1000, heartbeatMs: 100, shutdownGraceMs: 0, signer: testBusAuth().signer("role:a") };
    expect(() => createHarness({ ...base })).toThrow(/exactly one of `role` or `team`/);
    expect(() => createHarness({ ...base, role: "a", team: "b" })).toThrow(/exactly one/);
    expect(() => createHarness({ ...base, role: "bad name" })).toThrow(/not a valid queue name/);
    expect(() => createHarness({ ...base, role: "a", concurrency: 0 })).toThrow(/concurrency/);
    expect(() => createHarness({ ...base, role: "a", heartbeatMs: 1000 })).toThrow(/heartbeatMs \(1000\) must be below reclaimIdleMs/);
    expect(() => createHarness({ ...base, team: "ops" })).toThrow(/needs a bus signer for team:ops, not role:a/);
    expect(createHarness({ ...base, team: "ops", signer: testBusAuth().signer("team:ops") }).stream).toBe("team:ops");
  });

  it("a team harness consumes team:NAME and speaks as the team", async () => {
    const harness = fx.harness({ role: undefined, team: "ops", handler: () => "team work" });
    const running = harness.start();
    await fx.publish("team:ops", workEnvelope());
    const [sent] = await fx.sent(1);
    expect(sent?.source).toMatchObject({ kind: EndpointKind.TEAM, id: "ops" });
    await harness.close();
    await running;
  });
});
