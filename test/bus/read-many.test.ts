/**
 * Bus.readMany on real Redis (and on a Redis Cluster in the cluster project, where the streams below fall in
 * different slots): entries of several streams, each naming its stream; `count` caps the whole read and nothing is
 * left pending that was not returned; a blocked read wakes for an entry on any stream; missing groups come back.
 */
import calculateSlot from "cluster-key-slot";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Bus, BusEntry } from "../../src/bus/bus.js";
import { createEnvelope, EnvelopeKind, type EnvelopeInit } from "../../src/bus/codec.js";
import { streamKey } from "../../src/bus/keys.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { mastersOf } from "../../src/bus/redis-connection.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

const STREAMS = ["coordinator:0", "coordinator:1", "coordinator:2", "coordinator:3", "coordinator:4"];
const GROUP = "coordinators";
let t: TestRedis;
let bus: Bus;

function envelope(id: string): ReturnType<typeof createEnvelope> {
  return createEnvelope({ id, orgId: "org-1", taskId: "task-1", stepId: "step-1", kind: EnvelopeKind.WORK } as EnvelopeInit);
}

async function publishTo(stream: string, ids: string[]): Promise<void> {
  await bus.publish(ids.map((id) => ({ stream, envelope: envelope(id) })));
}

async function pendingInAll(): Promise<number> {
  let pending = 0;
  for (const stream of STREAMS) pending += (await bus.stats(stream, GROUP)).pending;
  return pending;
}

/** Waits until `n` connections (on any master) are blocked in XREADGROUP. */
async function waitUntilBlocked(n: number): Promise<void> {
  const servers = await mastersOf(t.redis);
  for (let i = 0; i < 200; i++) {
    const lists = await Promise.all(servers.map((server) => server.client("LIST") as Promise<string>));
    const blocked = lists.join("\n").split("\n").filter((line) => / flags=b /.test(line) && / cmd=xreadgroup /.test(line));
    if (blocked.length >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`fewer than ${n} XREADGROUPs became blocked`);
}

const ids = (entries: BusEntry[]): string[] => entries.map((e) => e.envelope.id).sort();

beforeEach(async () => {
  t = await createTestRedis();
  bus = createRedisBus({ redis: t.redis, keyPrefix: t.prefix, maxPayloadBytes: 1024, maxDeliveries: 3 });
  for (const stream of STREAMS) await bus.ensureGroup(stream, GROUP);
});

afterEach(async () => {
  await bus.close();
  await t.cleanup();
});

describe("readMany", () => {
  it("the streams used here hash to different cluster slots", () => {
    expect(new Set(STREAMS.map((stream) => calculateSlot(streamKey(t.prefix, stream)))).size).toBe(STREAMS.length);
  });

  it("returns the entries of several streams, each naming its stream", async () => {
    await publishTo("coordinator:0", ["a0", "a1"]);
    await publishTo("coordinator:3", ["d0"]);
    await publishTo("coordinator:4", ["e0"]);
    const entries = await bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 0 });
    expect(entries.map((e) => [e.stream, e.envelope.id]).sort()).toEqual([
      ["coordinator:0", "a0"],
      ["coordinator:0", "a1"],
      ["coordinator:3", "d0"],
      ["coordinator:4", "e0"],
    ]);
    // In order within a stream.
    expect(entries.filter((e) => e.stream === "coordinator:0").map((e) => e.envelope.id)).toEqual(["a0", "a1"]);
    expect(await bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 0 })).toEqual([]);
  });

  it("takes at most count entries in all, leaves nothing pending it did not return, and reaches every stream", async () => {
    const published: string[] = [];
    for (const [s, stream] of STREAMS.entries()) {
      const batch = Array.from({ length: 6 }, (_, i) => `s${s}-${i}`);
      published.push(...batch);
      await publishTo(stream, batch);
    }
    const seen: string[] = [];
    const firstStreams = new Set<string>();
    for (let round = 0; round < 20 && seen.length < published.length; round++) {
      const entries = await bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 4, blockMs: 0 });
      expect(entries.length).toBeLessThanOrEqual(4);
      if (round < STREAMS.length) firstStreams.add(entries[0]!.stream);
      seen.push(...entries.map((e) => e.envelope.id));
      expect(await pendingInAll()).toBe(seen.length);
    }
    expect(seen.sort()).toEqual(published.sort());
    // The stream read first rotates: a busy stream does not starve the others.
    expect(firstStreams.size).toBeGreaterThan(1);
  });

  it("a streams list with repeats reads each stream once", async () => {
    await publishTo("coordinator:1", ["b0"]);
    const entries = await bus.readMany({ streams: ["coordinator:1", "coordinator:1", "coordinator:2"], group: GROUP, consumer: "c", count: 10, blockMs: 0 });
    expect(ids(entries)).toEqual(["b0"]);
  });

  it("a blocked read returns with the entry published to any one stream", async () => {
    const started = Date.now();
    const read = bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 2_000 });
    await waitUntilBlocked(1);
    await publishTo("coordinator:2", ["late"]);
    const entries = await read;
    expect(entries.map((e) => [e.stream, e.envelope.id])).toEqual([["coordinator:2", "late"]]);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(await pendingInAll()).toBe(1);
  });

  it("a blocked read with nothing published returns empty after blockMs", async () => {
    const started = Date.now();
    expect(await bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 200 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });

  it("recreates groups whose streams were deleted, and reads what is published after", async () => {
    await publishTo("coordinator:1", ["before"]);
    await t.redis.del(streamKey(t.prefix, "coordinator:1"));
    await t.redis.del(streamKey(t.prefix, "coordinator:3"));
    expect(await bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 0 })).toEqual([]);
    await publishTo("coordinator:1", ["after-1"]);
    await publishTo("coordinator:3", ["after-3"]);
    expect(ids(await bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 0 }))).toEqual(["after-1", "after-3"]);
  });

  it("recreates a group that vanished while a read was blocked on it", async () => {
    const read = bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 2_000 }).catch((error: unknown) => error);
    await waitUntilBlocked(1);
    await t.redis.del(streamKey(t.prefix, "coordinator:4"));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await publishTo("coordinator:4", ["again"]);
    const outcome = await read;
    expect(outcome).not.toBeInstanceOf(Error);
    // Either the blocked read came back with it, or it is the next read's.
    const got = [...(outcome as BusEntry[]), ...(await bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 0 }))];
    expect(ids(got)).toEqual(["again"]);
  });

  it("an aborted blocked read returns empty at once", async () => {
    const controller = new AbortController();
    const started = Date.now();
    const read = bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 5_000, signal: controller.signal });
    await waitUntilBlocked(1);
    controller.abort();
    expect(await read).toEqual([]);
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});
