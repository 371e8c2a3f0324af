/**
 * A turn whose RESULT cannot be written (the coordinator stream refuses the XADD) must leave its WORK entry
 * pending — the RESULT and the acknowledgement go out in one round trip (`Bus.publishAndAck`), and the
 * acknowledgement only after the RESULT is on its stream — so a later delivery still produces the outcome.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { ResultStatus } from "../../src/bus/codec.js";
import { streamKey } from "../../src/bus/keys.js";
import { HARNESS_GROUP } from "../../src/harness/harness.js";
import { waitForProgress } from "../support/wait.js";
import { createBusFixture, workEnvelope, type BusFixture } from "./fixtures.js";

let fx: BusFixture;
beforeEach(async () => {
  fx = await createBusFixture();
});
afterEach(async () => {
  await fx.cleanup();
});

it("leaves the WORK pending when the RESULT cannot be published, and answers it on the next delivery", async () => {
  const coordinatorKey = streamKey(fx.prefix, COORDINATOR_STREAM);
  // The coordinator's stream key holds a string: every XADD to it fails with WRONGTYPE.
  await fx.redis.del(coordinatorKey);
  await fx.redis.set(coordinatorKey, "not a stream");
  let runs = 0;
  const harness = fx.harness({ handler: () => ({ run: ++runs }), heartbeatMs: 100, reclaimIdleMs: 300 });
  const running = harness.start();
  const work = workEnvelope();
  await fx.publish("role:writer", work);

  await waitForProgress({
    what: "the turn to find its RESULT refused",
    progress: () => ({ ...harness.stats }),
    done: (stats) => stats.unsent >= 1,
  });
  expect((await fx.bus.stats("role:writer", HARNESS_GROUP)).pending).toBe(1);

  // Redis takes RESULTs again: the pending entry is reclaimed, run again, answered and acknowledged.
  await fx.redis.del(coordinatorKey);
  await fx.bus.ensureGroup(COORDINATOR_STREAM, "observer");
  const sent = await waitForProgress({
    what: "the reclaimed WORK to be answered and acknowledged",
    progress: async () => ({ sent: await fx.sent(1, 100), pending: (await fx.bus.stats("role:writer", HARNESS_GROUP)).pending, stats: { ...harness.stats } }),
    key: (state) => JSON.stringify({ sent: state.sent.length, pending: state.pending, stats: state.stats }),
    done: (state) => state.sent.length >= 1 && state.pending === 0,
  });
  await harness.close();
  await running;

  expect(sent.sent.map((e) => e.taskId)).toEqual([work.taskId]);
  expect(sent.sent[0]).toMatchObject({ status: ResultStatus.OK });
  expect(runs).toBeGreaterThanOrEqual(2);
  expect(harness.stats).toMatchObject({ completed: 1, reclaimed: 1 });
});
