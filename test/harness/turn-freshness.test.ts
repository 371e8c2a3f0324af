/**
 * A reclaimed entry may be a turn whose outcome was already published before its worker died: the harness asks
 * its TurnCheck before running it again, and only for redeliveries. The check here is a small function standing in
 * for the port (the Postgres adapter has its own test, step-turn-check.test.ts); the bus is real Redis.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { EnvelopeKind, ResultStatus, type Envelope } from "../../src/bus/codec.js";
import { HARNESS_GROUP } from "../../src/harness/harness.js";
import type { TurnCheck, TurnRef } from "../../src/harness/turn-check.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { createBusFixture, replyEnvelope, runOne, waitFor, workEnvelope, type BusFixture } from "./fixtures.js";

let fx: BusFixture;
beforeEach(async () => {
  fx = await createBusFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

/** A TurnCheck that answers `answer` (or throws it) and records what it was asked. */
function countingCheck(answer: boolean | Error): TurnCheck & { asked: TurnRef[] } {
  const asked: TurnRef[] = [];
  return {
    asked,
    async isCurrent(ref) {
      asked.push(ref);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
}

/**
 * Leaves `incoming` pending under a consumer that never acknowledges it — a worker killed after publishing its
 * outcome — so the harness under test gets it only by reclaiming it (its second delivery).
 */
async function leavePendingUnderDeadWorker(incoming: Envelope): Promise<void> {
  await fx.bus.ensureGroup("role:writer", HARNESS_GROUP);
  await fx.publish("role:writer", incoming);
  const taken = await fx.bus.read({ stream: "role:writer", group: HARNESS_GROUP, consumer: "killed-worker", count: 10, blockMs: 0 });
  expect(taken.map((e) => e.envelope.id)).toEqual([incoming.id]);
}

const reclaimingOptions = { reclaimIdleMs: 100, heartbeatMs: 20 };

describe("reclaimed entries and the turn check", () => {
  it("acknowledges a reclaimed entry whose turn already stood down, without running the handler", async () => {
    const incoming = replyEnvelope({ stepId: "research", attempt: 2, turn: 4 });
    await leavePendingUnderDeadWorker(incoming);
    const check = countingCheck(false);
    const metrics = createMetrics();
    let ran = 0;
    const harness = fx.harness({
      ...reclaimingOptions,
      turnCheck: check,
      metrics,
      handler: () => {
        ran += 1;
        return "an old turn run again";
      },
    });
    const running = harness.start();
    await waitFor(() => harness.stats.stale === 1, 5_000, "the stale entry to be skipped");
    await waitFor(async () => (await fx.bus.stats("role:writer", HARNESS_GROUP)).pending === 0, 5_000, "the stale entry to be acked");
    await harness.close();
    await running;

    expect(ran).toBe(0);
    expect(check.asked).toEqual([{ orgId: incoming.orgId, taskId: incoming.taskId, stepId: "research", attempt: 2, turn: 4 }]);
    expect(harness.stats).toMatchObject({ stale: 1, reclaimed: 1, completed: 0, failed: 0, delegated: 0 });
    // Its outcome went out before the worker died; skipping it publishes nothing more.
    expect((await fx.bus.stats(COORDINATOR_STREAM, "observer")).length).toBe(0);
    const stale = (await metrics.harnessTurns.get()).values.find((v) => v.labels.outcome === "stale");
    expect(stale).toMatchObject({ labels: { stream: "role:writer", outcome: "stale" }, value: 1 });
  });

  it("runs a reclaimed entry whose turn is still current", async () => {
    const incoming = workEnvelope({ turn: 0 });
    await leavePendingUnderDeadWorker(incoming);
    const check = countingCheck(true);
    const harness = fx.harness({ ...reclaimingOptions, turnCheck: check, handler: () => ({ ran: true }) });
    const running = harness.start();
    const [sent] = await fx.sent(1);
    await waitFor(async () => (await fx.bus.stats("role:writer", HARNESS_GROUP)).pending === 0, 5_000, "the entry to be acked");
    await harness.close();
    await running;

    expect(check.asked).toHaveLength(1);
    expect(check.asked[0]).toMatchObject({ taskId: incoming.taskId, attempt: 1, turn: 0 });
    expect(sent).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK, turn: 0 });
    expect(harness.stats).toMatchObject({ completed: 1, stale: 0 });
  });

  it("runs a reclaimed entry when the check cannot answer: the coordinator still drops a stale outcome", async () => {
    await leavePendingUnderDeadWorker(workEnvelope());
    const check = countingCheck(new Error("database unreachable"));
    const harness = fx.harness({ ...reclaimingOptions, turnCheck: check, handler: () => ({ ran: true }) });
    const running = harness.start();
    const [sent] = await fx.sent(1);
    await harness.close();
    await running;
    expect(check.asked).toHaveLength(1);
    expect(sent).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK });
  });

  it("never asks on a first delivery", async () => {
    const check = countingCheck(false);
    const sent = await runOne(fx, workEnvelope(), { turnCheck: check, handler: () => ({ ran: true }) });
    expect(sent).toMatchObject({ kind: EnvelopeKind.RESULT, status: ResultStatus.OK });
    expect(check.asked).toEqual([]);
  });
});
