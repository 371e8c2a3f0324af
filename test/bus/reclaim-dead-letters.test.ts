import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Bus } from "../../src/bus/bus.js";
import { createEnvelope, EnvelopeKind } from "../../src/bus/codec.js";
import { deadLetterKey, streamKey } from "../../src/bus/keys.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

const STREAM = "role:writer";
const GROUP = "writers";
let t: TestRedis;
let bus: Bus;

function envelope(id: string) {
  return createEnvelope({ id, orgId: "org-1", taskId: "task-1", stepId: "step-1", kind: EnvelopeKind.WORK });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function publishAndRead(ids: string[], consumer = "dying"): Promise<string[]> {
  await bus.publish(ids.map((id) => ({ stream: STREAM, envelope: envelope(id) })));
  const entries = await bus.read({ stream: STREAM, group: GROUP, consumer, count: ids.length, blockMs: 0 });
  expect(entries.map((e) => e.envelope.id)).toEqual(ids);
  return entries.map((e) => e.id);
}

/** [entry id, owner, deliveries] for every pending entry of the group. */
async function pendingEntries(): Promise<[string, string, number][]> {
  const rows = (await t.redis.xpending(streamKey(t.prefix, STREAM), GROUP, "-", "+", 100)) as [string, string, number, number][];
  return rows.map(([id, owner, , deliveries]) => [id, owner, deliveries]);
}

beforeEach(async () => {
  t = await createTestRedis();
  bus = createRedisBus({ redis: t.redis, keyPrefix: t.prefix, maxPayloadBytes: 1024, maxDeliveries: 2 });
  await bus.ensureGroup(STREAM, GROUP);
});

afterEach(async () => {
  await bus.close();
  await t.cleanup();
});

describe("reclaim", () => {
  it("hands a dead consumer's idle entries to another consumer", async () => {
    const [id] = await publishAndRead(["w-1"]);
    expect(await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "rescuer", minIdleMs: 60_000, count: 10 })).toEqual([]);

    await sleep(60);
    const reclaimed = await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "rescuer", minIdleMs: 50, count: 10 });
    expect(reclaimed.map((e) => [e.id, e.envelope.id, e.stream])).toEqual([[id, "w-1", STREAM]]);
    expect(await pendingEntries()).toEqual([[id, "rescuer", 2]]);
  });

  it("dead-letters an entry delivered more than maxDeliveries times, and replay puts it back", async () => {
    const [id] = await publishAndRead(["w-1"]);
    // Second delivery (2 <= maxDeliveries 2): returned.
    expect((await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "r", minIdleMs: 0, count: 10 })).map((e) => e.id)).toEqual([id]);
    // Third delivery would exceed the limit: dead-lettered and acknowledged instead.
    expect(await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "r", minIdleMs: 0, count: 10 })).toEqual([]);
    expect(await pendingEntries()).toEqual([]);

    const dead = await bus.listDeadLetters(STREAM);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ stream: STREAM, originalId: id, reason: "max deliveries exceeded (3)", deliveries: 3 });
    expect(await bus.stats(STREAM, GROUP)).toEqual({ length: 1, pending: 0, deadLetters: 1 });

    expect(await bus.replayDeadLetters(STREAM, [dead[0]!.id])).toBe(1);
    expect(await bus.listDeadLetters(STREAM)).toEqual([]);
    // Replaying the same id again is a no-op.
    expect(await bus.replayDeadLetters(STREAM, [dead[0]!.id])).toBe(0);
    const again = await bus.read({ stream: STREAM, group: GROUP, consumer: "fresh", count: 10, blockMs: 0 });
    expect(again.map((e) => e.envelope)).toEqual([envelope("w-1")]);
    expect(again[0]!.id).not.toBe(id);
  });

  it("copes with pending entries that were deleted from the stream", async () => {
    const [gone, kept] = await publishAndRead(["w-1", "w-2"]);
    await t.redis.xdel(streamKey(t.prefix, STREAM), gone!);
    const reclaimed = await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "r", minIdleMs: 0, count: 10 });
    expect(reclaimed.map((e) => e.id)).toEqual([kept]);
    expect(await pendingEntries()).toEqual([[kept, "r", 2]]);
    expect(await bus.listDeadLetters(STREAM)).toEqual([]);
  });

  it("dead-letters reclaimed entries that do not decode", async () => {
    const key = streamKey(t.prefix, STREAM);
    // Consumed by a consumer that never decoded it (e.g. an older build), so it sits pending.
    const garbageId = await t.redis.xadd(key, "*", "e", Buffer.from([0xff, 0xff, 0xff]));
    await t.redis.xreadgroup("GROUP", GROUP, "old", "COUNT", 10, "STREAMS", key, ">");
    expect(await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "r", minIdleMs: 0, count: 10 })).toEqual([]);
    const dead = await bus.listDeadLetters(STREAM);
    expect(dead.map((d) => [d.originalId, d.deliveries])).toEqual([[garbageId, 2]]);
    expect(dead[0]!.reason).toMatch(/^MALFORMED_ENVELOPE/);
    expect(await pendingEntries()).toEqual([]);
  });

  it("finds idle entries behind many busy ones", async () => {
    const ids = await publishAndRead(Array.from({ length: 30 }, (_, i) => `w-${i}`));
    await sleep(600);
    // Keep all but the last fresh; XAUTOCLAIM with COUNT 1 scans only 10 PEL entries per call. The idle window is
    // wide so that a loaded machine, slow between the touch and the reclaim, does not age the touched entries past it.
    await bus.touch(STREAM, GROUP, "dying", ids.slice(0, -1));
    const reclaimed = await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "r", minIdleMs: 500, count: 1 });
    expect(reclaimed.map((e) => e.id)).toEqual([ids.at(-1)]);
  });

  it("recreates a missing group and reclaims nothing", async () => {
    await t.redis.del(streamKey(t.prefix, STREAM));
    expect(await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "r", minIdleMs: 0, count: 10 })).toEqual([]);
    expect(await bus.stats(STREAM, GROUP)).toEqual({ length: 0, pending: 0, deadLetters: 0 });
  });
});

describe("touch", () => {
  it("resets idle time so the entry is not reclaimed, without counting a delivery", async () => {
    const [id] = await publishAndRead(["w-1"], "worker");
    await sleep(120);
    await bus.touch(STREAM, GROUP, "worker", [id!]);
    expect(await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "r", minIdleMs: 100, count: 10 })).toEqual([]);
    expect(await pendingEntries()).toEqual([[id, "worker", 1]]);
    await sleep(120);
    expect((await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "r", minIdleMs: 100, count: 10 })).map((e) => e.id)).toEqual([id]);
  });

  it("does not take an entry back from the consumer that reclaimed it", async () => {
    const [id] = await publishAndRead(["w-1"], "stalled");
    await bus.reclaim({ stream: STREAM, group: GROUP, consumer: "rescuer", minIdleMs: 0, count: 10 });
    await bus.touch(STREAM, GROUP, "stalled", [id!]);
    expect(await pendingEntries()).toEqual([[id, "rescuer", 2]]);
  });
});

describe("deadLetter", () => {
  it("moves a pending entry with its delivery count, acks it, and does not duplicate on repeat", async () => {
    const [id] = await publishAndRead(["w-1"], "worker");
    const raw = new Uint8Array([1, 2, 3, 0, 255]);
    await bus.deadLetter(STREAM, GROUP, id!, raw, "handler refused: bad input");
    await bus.deadLetter(STREAM, GROUP, id!, raw, "handler refused: bad input");
    const dead = await bus.listDeadLetters(STREAM);
    expect(dead.map(({ stream, originalId, reason, deliveries, raw }) => ({ stream, originalId, reason, deliveries, raw }))).toEqual([
      { stream: STREAM, originalId: id, reason: "handler refused: bad input", deliveries: 1, raw },
    ]);
    expect(await pendingEntries()).toEqual([]);
    // Same hash tag as the stream, so the scripts stay in one Cluster slot.
    expect(await t.redis.xlen(deadLetterKey(t.prefix, STREAM))).toBe(1);
  });

  it("lists dead letters in order, limited by count", async () => {
    const ids = await publishAndRead(["a", "b", "c"], "worker");
    for (const id of ids) await bus.deadLetter(STREAM, GROUP, id, new Uint8Array([1]), `reason ${id}`);
    expect((await bus.listDeadLetters(STREAM, 2)).map((d) => d.originalId)).toEqual(ids.slice(0, 2));
    expect((await bus.listDeadLetters(STREAM)).map((d) => d.originalId)).toEqual(ids);
  });
});
