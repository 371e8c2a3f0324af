import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Bus } from "../../src/bus/bus.js";
import { createEnvelope, EnvelopeKind } from "../../src/bus/codec.js";
import { streamKey } from "../../src/bus/keys.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

const STREAM = "role:writer";
let t: TestRedis;
let bus: Bus;

function envelope(id: string) {
  return createEnvelope({ id, orgId: "org-1", taskId: "task-1", stepId: "step-1", kind: EnvelopeKind.WORK });
}

/** Publishes `count` entries and returns their ids in stream order. */
async function fill(count: number): Promise<string[]> {
  await bus.publish(Array.from({ length: count }, (_, i) => ({ stream: STREAM, envelope: envelope(`e-${i}`) })));
  const entries = await t.redis.xrange(streamKey(t.prefix, STREAM), "-", "+");
  return entries.map(([id]) => id);
}

async function remainingIds(): Promise<string[]> {
  return (await t.redis.xrange(streamKey(t.prefix, STREAM), "-", "+")).map(([id]) => id);
}

async function readIds(group: string, count: number): Promise<string[]> {
  return (await bus.read({ stream: STREAM, group, consumer: "c", count, blockMs: 0 })).map((e) => e.id);
}

beforeEach(async () => {
  t = await createTestRedis();
  bus = createRedisBus({ redis: t.redis, keyPrefix: t.prefix, maxPayloadBytes: 1024, maxDeliveries: 3 });
});

afterEach(async () => {
  await bus.close();
  await t.cleanup();
});

describe("trim", () => {
  it("removes acknowledged entries but never pending or undelivered ones", async () => {
    await bus.ensureGroup(STREAM, "g");
    const ids = await fill(10);
    const delivered = await readIds("g", 6);
    expect(delivered).toEqual(ids.slice(0, 6));
    // ids[3] and ids[5] stay pending; ids[6..9] were never delivered.
    await bus.ack(STREAM, "g", [ids[0]!, ids[1]!, ids[2]!, ids[4]!]);

    expect(await bus.trim(STREAM, 0)).toBe(3);
    expect(await remainingIds()).toEqual(ids.slice(3));
    // Nothing more can go until ids[3] is acknowledged.
    expect(await bus.trim(STREAM, 0)).toBe(0);

    await bus.ack(STREAM, "g", [ids[3]!, ids[5]!]);
    expect(await bus.trim(STREAM, 0)).toBe(3);
    expect(await remainingIds()).toEqual(ids.slice(6));
  });

  it("keeps the last maxLen entries even when all are acknowledged", async () => {
    await bus.ensureGroup(STREAM, "g");
    const ids = await fill(10);
    await bus.ack(STREAM, "g", await readIds("g", 10));
    expect(await bus.trim(STREAM, 4)).toBe(6);
    expect(await remainingIds()).toEqual(ids.slice(6));
    expect(await bus.trim(STREAM, 4)).toBe(0);
  });

  it("takes the stricter of maxLen and the group floor", async () => {
    await bus.ensureGroup(STREAM, "g");
    const ids = await fill(10);
    await bus.ack(STREAM, "g", await readIds("g", 7));
    // maxLen alone would remove 8; the group has not received ids[7..9].
    expect(await bus.trim(STREAM, 2)).toBe(7);
    expect(await remainingIds()).toEqual(ids.slice(7));
  });

  it("keeps maxLen entries that the group has already acknowledged", async () => {
    await bus.ensureGroup(STREAM, "g");
    const ids = await fill(10);
    await bus.ack(STREAM, "g", await readIds("g", 8));
    // The floor (ids[8]) alone would allow 8; maxLen 5 allows only 5.
    expect(await bus.trim(STREAM, 5)).toBe(5);
    expect(await remainingIds()).toEqual(ids.slice(5));
  });

  it("respects the slowest of several groups", async () => {
    await bus.ensureGroup(STREAM, "fast");
    await bus.ensureGroup(STREAM, "slow");
    const ids = await fill(6);
    await bus.ack(STREAM, "fast", await readIds("fast", 6));
    expect(await bus.trim(STREAM, 0)).toBe(0);
    expect(await remainingIds()).toEqual(ids);

    await bus.ack(STREAM, "slow", await readIds("slow", 2));
    expect(await bus.trim(STREAM, 0)).toBe(2);
    expect(await remainingIds()).toEqual(ids.slice(2));
  });

  it("trims by maxLen alone when the stream has no groups", async () => {
    const ids = await fill(10);
    expect(await bus.trim(STREAM, 3)).toBe(7);
    expect(await remainingIds()).toEqual(ids.slice(7));
  });

  it("loads its script again after SCRIPT FLUSH", async () => {
    const ids = await fill(4);
    // Other test files only fall back to EVAL once while this runs.
    await t.redis.script("FLUSH");
    expect(await bus.trim(STREAM, 1)).toBe(3);
    expect(await remainingIds()).toEqual(ids.slice(3));
  });

  it("does nothing for a short or missing stream", async () => {
    expect(await bus.trim(STREAM, 5)).toBe(0);
    const ids = await fill(3);
    expect(await bus.trim(STREAM, 5)).toBe(0);
    expect(await remainingIds()).toEqual(ids);
  });
});
