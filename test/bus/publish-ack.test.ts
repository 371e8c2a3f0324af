/**
 * `Bus.publishAndAck`: a harness turn's RESULT and the XACK of its WORK in one round trip, and no XACK unless
 * the RESULT is on its stream — on a single Redis (one Lua script) and on the Cluster path (two awaited writes).
 */
import type { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Bus } from "../../src/bus/bus.js";
import { createEnvelope, encodeEnvelope, EnvelopeKind, type EnvelopeInit } from "../../src/bus/codec.js";
import { streamKey } from "../../src/bus/keys.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { ErrorCode } from "../../src/errors.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

const MAX_PAYLOAD = 1024;
let t: TestRedis;

function encoded(id: string, kind: EnvelopeKind = EnvelopeKind.RESULT): Uint8Array {
  return encodeEnvelope(createEnvelope({ id, orgId: "org-1", taskId: "task-1", stepId: "step-1", kind } as EnvelopeInit), MAX_PAYLOAD);
}

/** The same connection, answering `isCluster` as an ioredis Cluster does: the adapter takes its Cluster path. */
function seenAsCluster(redis: Redis): Redis {
  return new Proxy(redis, {
    get(target, property) {
      if (property === "isCluster") return true;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A WORK entry read by consumer `c` of group `workers`, pending. */
async function pendingWork(bus: Bus): Promise<string> {
  await bus.ensureGroup("role:writer", "workers");
  await bus.publishEncoded([{ stream: "role:writer", data: encoded("work-1", EnvelopeKind.WORK) }]);
  const [entry] = await bus.read({ stream: "role:writer", group: "workers", consumer: "c", count: 1, blockMs: 0 });
  return entry!.id;
}

async function resultIds(bus: Bus): Promise<string[]> {
  await bus.ensureGroup("coordinator", "coordinators");
  return (await bus.read({ stream: "coordinator", group: "coordinators", consumer: "k", count: 10, blockMs: 0 })).map((e) => e.envelope.id);
}

beforeEach(async () => {
  t = await createTestRedis();
});

afterEach(async () => {
  await t.cleanup();
});

for (const path of ["single Redis (one script)", "Cluster path (two awaited writes)"] as const) {
  describe(path, () => {
    let bus: Bus;
    beforeEach(() => {
      const redis = path.startsWith("Cluster") ? seenAsCluster(t.redis) : t.redis;
      bus = createRedisBus({ redis, keyPrefix: t.prefix, maxPayloadBytes: MAX_PAYLOAD, maxDeliveries: 3 });
    });
    afterEach(async () => {
      await bus.close();
    });

    it("publishes the RESULT, then acknowledges the WORK", async () => {
      const workId = await pendingWork(bus);
      await bus.publishAndAck([{ stream: "coordinator", data: encoded("result-1") }], { stream: "role:writer", group: "workers", ids: [workId] });
      expect(await resultIds(bus)).toEqual(["result-1"]);
      expect(await bus.stats("role:writer", "workers")).toMatchObject({ pending: 0 });
    });

    it("does not acknowledge when the XADD fails: the WORK stays pending for a redelivery", async () => {
      const workId = await pendingWork(bus);
      // The RESULT's stream key holds a string: XADD fails with WRONGTYPE.
      await t.redis.set(streamKey(t.prefix, "coordinator"), "not a stream");
      const failed = bus.publishAndAck([{ stream: "coordinator", data: encoded("result-1") }], { stream: "role:writer", group: "workers", ids: [workId] });
      await expect(failed).rejects.toMatchObject({ code: ErrorCode.Unavailable, message: expect.stringMatching(/WRONGTYPE/) });
      await expect(failed).rejects.not.toMatchObject({ details: { published: true } });
      expect(await bus.stats("role:writer", "workers")).toMatchObject({ pending: 1 });
    });

    it("resolves when the group is gone: the RESULT is out, nothing is left to acknowledge", async () => {
      const workId = await pendingWork(bus);
      await t.redis.xgroup("DESTROY", streamKey(t.prefix, "role:writer"), "workers");
      await bus.publishAndAck([{ stream: "coordinator", data: encoded("result-1") }], { stream: "role:writer", group: "workers", ids: [workId] });
      expect(await resultIds(bus)).toEqual(["result-1"]);
    });

    it("says `published` when only the acknowledgement failed", async () => {
      const workId = await pendingWork(bus);
      // The WORK stream's key is replaced by a string: XACK fails with WRONGTYPE after the RESULT is out.
      await t.redis.del(streamKey(t.prefix, "role:writer"));
      await t.redis.set(streamKey(t.prefix, "role:writer"), "not a stream");
      const failed = bus.publishAndAck([{ stream: "coordinator", data: encoded("result-1") }], { stream: "role:writer", group: "workers", ids: [workId] });
      await expect(failed).rejects.toMatchObject({ code: ErrorCode.Unavailable, details: { published: true } });
      expect(await resultIds(bus)).toEqual(["result-1"]);
    });

    it("publishes several envelopes in order and acknowledges several entries", async () => {
      await bus.ensureGroup("role:writer", "workers");
      await bus.publishEncoded([1, 2, 3].map((i) => ({ stream: "role:writer", data: encoded(`work-${i}`, EnvelopeKind.WORK) })));
      const entries = await bus.read({ stream: "role:writer", group: "workers", consumer: "c", count: 3, blockMs: 0 });
      const items = ["a", "b", "c"].map((id) => ({ stream: "coordinator", data: encoded(`result-${id}`) }));
      await bus.publishAndAck(items, { stream: "role:writer", group: "workers", ids: entries.map((e) => e.id) });
      expect(await resultIds(bus)).toEqual(["result-a", "result-b", "result-c"]);
      expect(await bus.stats("role:writer", "workers")).toMatchObject({ pending: 0 });
    });
  });
}

describe("why a script and not a pipeline", () => {
  it("a pipelined XADD that fails does not stop the XACK after it (what publishAndAck must not do)", async () => {
    const bus = createRedisBus({ redis: t.redis, keyPrefix: t.prefix, maxPayloadBytes: MAX_PAYLOAD, maxDeliveries: 3 });
    const workId = await pendingWork(bus);
    await t.redis.set(streamKey(t.prefix, "coordinator"), "not a stream");
    const replies = await t.redis
      .multi()
      .xadd(streamKey(t.prefix, "coordinator"), "*", "e", Buffer.from(encoded("result-1")))
      .xack(streamKey(t.prefix, "role:writer"), "workers", workId)
      .exec();
    // MULTI/EXEC (a plain pipeline too) runs the XACK although the XADD failed: the RESULT is lost, the WORK acknowledged.
    expect(replies?.[0]?.[0]?.message).toMatch(/WRONGTYPE/);
    expect(replies?.[1]).toEqual([null, 1]);
    expect(await bus.stats("role:writer", "workers")).toMatchObject({ pending: 0 });
    await bus.close();
  });
});
