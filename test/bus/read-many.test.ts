/**
 * Bus.readMany on real Redis (and on a Redis Cluster in the cluster project, where the streams below fall in
 * different slots): entries of several streams, each naming its stream; `count` caps the whole read and nothing is
 * left pending that was not returned; a blocked read wakes for an entry on any stream; missing groups come back.
 */
import calculateSlot from "cluster-key-slot";
import { beforeEach, describe, expect, it } from "vitest";
import type { BusEntry } from "../../src/bus/bus.js";
import { streamKey } from "../../src/bus/keys.js";
import { useTestBus, waitUntilBlocked, workEnvelope } from "../support/bus.js";

const STREAMS = ["coordinator:0", "coordinator:1", "coordinator:2", "coordinator:3", "coordinator:4"];
const GROUP = "coordinators";
const ctx = useTestBus();

async function publishTo(stream: string, ids: string[]): Promise<void> {
  await ctx.bus.publish(ids.map((id) => ({ stream, envelope: workEnvelope(id) })));
}

async function pendingInAll(): Promise<number> {
  let pending = 0;
  for (const stream of STREAMS) pending += (await ctx.bus.stats(stream, GROUP)).pending;
  return pending;
}

const ids = (entries: BusEntry[]): string[] => entries.map((e) => e.envelope.id).sort();

beforeEach(async () => {
  for (const stream of STREAMS) await ctx.bus.ensureGroup(stream, GROUP);
});

describe("readMany", () => {
  it("the streams used here hash to different cluster slots", () => {
    expect(new Set(STREAMS.map((stream) => calculateSlot(streamKey(ctx.t.prefix, stream)))).size).toBe(STREAMS.length);
  });

  it("returns the entries of several streams, each naming its stream", async () => {
    await publishTo("coordinator:0", ["a0", "a1"]);
    await publishTo("coordinator:3", ["d0"]);
    await publishTo("coordinator:4", ["e0"]);
    const entries = await ctx.bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 0 });
    expect(entries.map((e) => [e.stream, e.envelope.id]).sort()).toEqual([
      ["coordinator:0", "a0"],
      ["coordinator:0", "a1"],
      ["coordinator:3", "d0"],
      ["coordinator:4", "e0"],
    ]);
    // In order within a stream.
    expect(entries.filter((e) => e.stream === "coordinator:0").map((e) => e.envelope.id)).toEqual(["a0", "a1"]);
    expect(await ctx.bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 0 })).toEqual([]);
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
      const entries = await ctx.bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 4, blockMs: 0 });
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
    const entries = await ctx.bus.readMany({ streams: ["coordinator:1", "coordinator:1", "coordinator:2"], group: GROUP, consumer: "c", count: 10, blockMs: 0 });
    expect(ids(entries)).toEqual(["b0"]);
  });

  it("a blocked read returns with the entry published to any one stream", async () => {
    const started = Date.now();
    const read = ctx.bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 2_000 });
    await waitUntilBlocked(ctx.t.redis);
    await publishTo("coordinator:2", ["late"]);
    const entries = await read;
    expect(entries.map((e) => [e.stream, e.envelope.id])).toEqual([["coordinator:2", "late"]]);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(await pendingInAll()).toBe(1);
  });

  it("a blocked read with nothing published returns empty after blockMs", async () => {
    const started = Date.now();
    expect(await ctx.bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 200 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });

  it("recreates groups whose streams were deleted, and reads what is published after", async () => {
    await publishTo("coordinator:1", ["before"]);
    await ctx.t.redis.del(streamKey(ctx.t.prefix, "coordinator:1"));
    await ctx.t.redis.del(streamKey(ctx.t.prefix, "coordinator:3"));
    expect(await ctx.bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 0 })).toEqual([]);
    await publishTo("coordinator:1", ["after-1"]);
    await publishTo("coordinator:3", ["after-3"]);
    expect(ids(await ctx.bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 0 }))).toEqual(["after-1", "after-3"]);
  });

  it("recreates a group that vanished while a read was blocked on it", async () => {
    const read = ctx.bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 2_000 }).catch((error: unknown) => error);
    await waitUntilBlocked(ctx.t.redis);
    await ctx.t.redis.del(streamKey(ctx.t.prefix, "coordinator:4"));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await publishTo("coordinator:4", ["again"]);
    const outcome = await read;
    expect(outcome).not.toBeInstanceOf(Error);
    // Either the blocked read came back with it, or it is the next read's.
    const got = [...(outcome as BusEntry[]), ...(await ctx.bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 0 }))];
    expect(ids(got)).toEqual(["again"]);
  });

  it("an aborted blocked read returns empty at once", async () => {
    const controller = new AbortController();
    const started = Date.now();
    const read = ctx.bus.readMany({ streams: STREAMS, group: GROUP, consumer: "c", count: 10, blockMs: 5_000, signal: controller.signal });
    await waitUntilBlocked(ctx.t.redis);
    controller.abort();
    expect(await read).toEqual([]);
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});
