/**
 * A reclaimed entry may be a turn whose outcome was already published before its worker died: the harness asks
 * its TurnCheck before running it again, and only for redeliveries. The check here is a small function standing in
 * for the port (the Postgres adapter has its own test, step-turn-check.test.ts); the bus is real Redis.
 */
import { randomUUID } from "node:crypto";
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

describe("reclaimed entries and the turn marks (no turn check: a worker without a database)", () => {
  /** Runs the queue's fresh entries with a harness that reclaims nothing, so their first deliveries leave turn marks. */
  async function deliverFresh(handler: (work: { attempt: number; turn: number }) => unknown): Promise<void> {
    const harness = fx.harness({ reclaimIdleMs: 60_000, handler: (w) => handler(w) });
    const running = harness.start();
    await waitFor(() => harness.stats.completed >= 1, 5_000, "the fresh entry to run");
    await harness.close();
    await running;
  }

  it("acknowledges unrun a reclaimed attempt whose step was dispatched again since (the attempt timed out)", async () => {
    const taskId = randomUUID();
    const old = workEnvelope({ taskId, stepId: "draft", attempt: 1, turn: 0 });
    await leavePendingUnderDeadWorker(old);
    await fx.publish("role:writer", workEnvelope({ taskId, stepId: "draft", attempt: 2, turn: 0 }));
    const runs: string[] = [];
    await deliverFresh((w) => runs.push(`attempt ${w.attempt}`));

    const harness = fx.harness({ ...reclaimingOptions, handler: (w) => runs.push(`attempt ${w.attempt} again`) });
    const running = harness.start();
    await waitFor(() => harness.stats.stale === 1, 5_000, "the superseded entry to be skipped");
    await waitFor(async () => (await fx.bus.stats("role:writer", HARNESS_GROUP)).pending === 0, 5_000, "the superseded entry to be acked");
    await harness.close();
    await running;
    expect(runs).toEqual(["attempt 2"]);
    expect(harness.stats).toMatchObject({ stale: 1, reclaimed: 1, completed: 0 });
  });

  it("acknowledges unrun a reclaimed turn whose step was handed its next turn (a REPLY) since", async () => {
    const taskId = randomUUID();
    await leavePendingUnderDeadWorker(workEnvelope({ taskId, stepId: "research", attempt: 1, turn: 0 }));
    await fx.publish("role:writer", replyEnvelope({ taskId, stepId: "research", attempt: 1, turn: 1 }));
    const runs: number[] = [];
    await deliverFresh((w) => runs.push(w.turn));
    const harness = fx.harness({ ...reclaimingOptions, handler: () => runs.push(-1) });
    const running = harness.start();
    await waitFor(() => harness.stats.stale === 1, 5_000, "the superseded turn to be skipped");
    await harness.close();
    await running;
    expect(runs).toEqual([1]);
  });

  it("runs a reclaimed entry that is still its step's latest turn, and one of another step", async () => {
    const taskId = randomUUID();
    await leavePendingUnderDeadWorker(workEnvelope({ taskId, stepId: "draft", attempt: 1, turn: 0 }));
    // Another step of the task moved on: no bearing on this one.
    await fx.publish("role:writer", workEnvelope({ taskId, stepId: "review", attempt: 3, turn: 2 }));
    await deliverFresh(() => ({ ok: true }));
    const harness = fx.harness({ ...reclaimingOptions, handler: () => ({ ran: true }) });
    const running = harness.start();
    const [sent] = await fx.sent(2);
    await harness.close();
    await running;
    expect(harness.stats).toMatchObject({ reclaimed: 1, completed: 1, stale: 0 });
    expect(sent).toBeDefined();
  });
});
