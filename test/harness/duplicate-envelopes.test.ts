/**
 * One envelope on a role stream as two entries (the outbox's fast path and its stale sweep both publishing a row,
 * or a coordinator killed between publishing and deleting its rows): the harness runs it once. Real Redis; the
 * only stand-in is a Bus whose claim rejects, for the fail-open case.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM, type Bus } from "../../src/bus/bus.js";
import { EnvelopeKind, ResultStatus, type Envelope } from "../../src/bus/codec.js";
import { HARNESS_GROUP } from "../../src/harness/harness.js";
import type { TurnCheck, TurnRef } from "../../src/harness/turn-check.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { createBusFixture, deferred, replyEnvelope, waitFor, workEnvelope, type BusFixture } from "./fixtures.js";

let fx: BusFixture;
beforeEach(async () => {
  fx = await createBusFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

async function pendingOnRoleStream(): Promise<number> {
  return (await fx.bus.stats("role:writer", HARNESS_GROUP)).pending;
}

async function sentToCoordinator(): Promise<number> {
  return (await fx.bus.stats(COORDINATOR_STREAM, "observer")).length;
}

/** Both publications of `envelope` as the stream holds them: two entries, one envelope id. */
async function publishTwice(envelope: Envelope): Promise<void> {
  await fx.publish("role:writer", envelope);
  await fx.publish("role:writer", envelope);
}

describe("the same envelope published twice", () => {
  it("runs the handler once and acknowledges the second entry as a duplicate", async () => {
    const incoming = workEnvelope({ turn: 2 });
    await fx.bus.ensureGroup("role:writer", HARNESS_GROUP);
    await publishTwice(incoming);
    const metrics = createMetrics();
    const ran: string[] = [];
    const harness = fx.harness({
      metrics,
      handler: (work) => {
        ran.push(work.taskId);
        return { once: true };
      },
    });
    const running = harness.start();
    await waitFor(() => harness.stats.completed + harness.stats.duplicate === 2, 5_000, "both entries to be handled");
    await waitFor(async () => (await pendingOnRoleStream()) === 0, 5_000, "both entries to be acked");
    const sent = await fx.sent(1);
    await harness.close();
    await running;

    expect(ran).toEqual([incoming.taskId]);
    expect(harness.stats).toMatchObject({ completed: 1, duplicate: 1, failed: 0, stale: 0 });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK, taskId: incoming.taskId, turn: 2 });
    expect(await sentToCoordinator()).toBe(1);
    const duplicate = (await metrics.harnessTurns.get()).values.find((v) => v.labels.outcome === "duplicate");
    expect(duplicate).toMatchObject({ labels: { stream: "role:writer", outcome: "duplicate" }, value: 1 });
  });

  it("runs it once when the second copy arrives while the first is still running", async () => {
    const incoming = replyEnvelope({ stepId: "research", turn: 5 });
    const started = deferred();
    const release = deferred();
    let running = 0;
    let mostAtOnce = 0;
    let ran = 0;
    const harness = fx.harness({
      handler: async () => {
        ran += 1;
        running += 1;
        mostAtOnce = Math.max(mostAtOnce, running);
        started.resolve();
        await release.promise;
        running -= 1;
        return { resumed: true };
      },
    });
    const loop = harness.start();
    await fx.publish("role:writer", incoming);
    await started.promise;
    await fx.publish("role:writer", incoming);
    // The second copy is settled while the first still holds its turn: acknowledged, never started.
    await waitFor(() => harness.stats.duplicate === 1, 5_000, "the second copy to be skipped");
    expect(harness.stats.inFlight).toBe(1);
    expect(await pendingOnRoleStream()).toBe(1);
    release.resolve();
    await waitFor(() => harness.stats.completed === 1, 5_000, "the first copy to finish");
    await waitFor(async () => (await pendingOnRoleStream()) === 0, 5_000, "the first copy to be acked");
    await harness.close();
    await loop;

    expect(ran).toBe(1);
    expect(mostAtOnce).toBe(1);
    expect(await sentToCoordinator()).toBe(1);
    expect(harness.stats).toMatchObject({ completed: 1, duplicate: 1 });
  });
});

describe("a reclaimed entry holding its own claim", () => {
  it("runs when its turn is current: a redelivery of the same entry is not a duplicate", async () => {
    const incoming = workEnvelope({ turn: 0 });
    await fx.bus.ensureGroup("role:writer", HARNESS_GROUP);
    await fx.publish("role:writer", incoming);
    // A worker took the entry and claimed its envelope, as a harness does, then died before acknowledging it.
    const taken = await fx.bus.read({ stream: "role:writer", group: HARNESS_GROUP, consumer: "killed-worker", count: 10, blockMs: 0 });
    expect(await fx.bus.claimEnvelopes("role:writer", taken)).toEqual([null]);
    const asked: TurnRef[] = [];
    const turnCheck: TurnCheck = {
      async isCurrent(ref) {
        asked.push(ref);
        return true;
      },
    };
    const harness = fx.harness({ reclaimIdleMs: 100, heartbeatMs: 20, turnCheck, handler: () => ({ ran: true }) });
    const loop = harness.start();
    const [sent] = await fx.sent(1);
    await waitFor(async () => (await pendingOnRoleStream()) === 0, 5_000, "the entry to be acked");
    await harness.close();
    await loop;

    expect(sent).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK, taskId: incoming.taskId, turn: 0 });
    expect(asked).toHaveLength(1);
    expect(harness.stats).toMatchObject({ reclaimed: 1, completed: 1, duplicate: 0, stale: 0 });
  });
});

describe("when Redis refuses the claim", () => {
  it("runs the entry: the coordinator still drops a stale outcome", async () => {
    let refused = 0;
    const refusingBus: Bus = {
      ...fx.bus,
      claimEnvelopes: async () => {
        refused += 1;
        throw new Error("ERR the claim was refused");
      },
    };
    const harness = fx.harness({ bus: refusingBus, handler: () => ({ ran: true }) });
    const loop = harness.start();
    await fx.publish("role:writer", workEnvelope());
    const [sent] = await fx.sent(1);
    await waitFor(async () => (await pendingOnRoleStream()) === 0, 5_000, "the entry to be acked");
    await harness.close();
    await loop;

    expect(refused).toBeGreaterThanOrEqual(1);
    expect(sent).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK });
    expect(harness.stats).toMatchObject({ completed: 1, duplicate: 0 });
  });
});
