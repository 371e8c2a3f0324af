/**
 * Finding streams and deleting keys by SCAN: on a cluster every master holds some of the slots, so a scan of one
 * node would miss streams (the cluster project runs this against three masters).
 */
import { describe, expect, it } from "vitest";
import { findDeadLetterStreams } from "../../src/bus/dead-letters.js";
import { mastersOf } from "../../src/bus/redis-connection.js";
import { deleteKeys, scanKeys } from "../../src/bus/redis-scan.js";
import { discoverStreams } from "../../src/bus/stream-discovery.js";
import { useTestBus, workEnvelope } from "../support/bus.js";

const STREAMS = Array.from({ length: 12 }, (_, i) => `role:r${i}`);
const ctx = useTestBus();


describe("stream discovery", () => {
  it("finds every stream and every dead-letter stream under the prefix, on every master", async () => {
    await ctx.bus.publish(STREAMS.map((stream, i) => ({ stream, envelope: workEnvelope(`e${i}`) })));
    await ctx.bus.ensureGroup("role:r3", "g");
    const [entry] = await ctx.bus.read({ stream: "role:r3", group: "g", consumer: "c", count: 1, blockMs: 0 });
    await ctx.bus.deadLetter("role:r3", "g", entry!.id, entry!.raw, "test");
    expect(await discoverStreams(ctx.t.redis, ctx.t.prefix)).toEqual([...STREAMS].sort());
    expect(await findDeadLetterStreams(ctx.t.redis, ctx.t.prefix)).toEqual(["role:r3"]);
    // With a cluster the streams are spread out: every master holds some.
    const servers = await mastersOf(ctx.t.redis);
    if (servers.length > 1) {
      const perServer = await Promise.all(servers.map((server) => server.scan("0", "MATCH", `${ctx.t.prefix}*`, "COUNT", 1000).then(([, keys]) => keys.length)));
      expect(perServer.filter((n) => n > 0).length).toBeGreaterThan(1);
    }
  });

  it("deletes every key under a pattern, whatever slot it is in", async () => {
    await ctx.bus.publish(STREAMS.map((stream, i) => ({ stream, envelope: workEnvelope(`e${i}`) })));
    expect(await deleteKeys(ctx.t.redis, `${ctx.t.prefix}*`)).toBe(STREAMS.length);
    const left: string[] = [];
    for await (const keys of scanKeys(ctx.t.redis, `${ctx.t.prefix}*`)) left.push(...keys);
    expect(left).toEqual([]);
  });
});
