/**
 * Finding streams and deleting keys by SCAN: on a cluster every master holds some of the slots, so a scan of one
 * node would miss streams (the cluster project runs this against three masters).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Bus } from "../../src/bus/bus.js";
import { createEnvelope, EnvelopeKind, type EnvelopeInit } from "../../src/bus/codec.js";
import { findDeadLetterStreams } from "../../src/bus/dead-letters.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { mastersOf } from "../../src/bus/redis-connection.js";
import { deleteKeys, scanKeys } from "../../src/bus/redis-scan.js";
import { discoverStreams } from "../../src/bus/stream-discovery.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

const STREAMS = Array.from({ length: 12 }, (_, i) => `role:r${i}`);
let t: TestRedis;
let bus: Bus;

beforeEach(async () => {
  t = await createTestRedis();
  bus = createRedisBus({ redis: t.redis, keyPrefix: t.prefix, maxPayloadBytes: 1024, maxDeliveries: 3 });
});

afterEach(async () => {
  await bus.close();
  await t.cleanup();
});

function envelope(id: string): ReturnType<typeof createEnvelope> {
  return createEnvelope({ id, orgId: "org-1", taskId: "task-1", stepId: "step-1", kind: EnvelopeKind.WORK } as EnvelopeInit);
}

describe("stream discovery", () => {
  it("finds every stream and every dead-letter stream under the prefix, on every master", async () => {
    await bus.publish(STREAMS.map((stream, i) => ({ stream, envelope: envelope(`e${i}`) })));
    await bus.ensureGroup("role:r3", "g");
    const [entry] = await bus.read({ stream: "role:r3", group: "g", consumer: "c", count: 1, blockMs: 0 });
    await bus.deadLetter("role:r3", "g", entry!.id, entry!.raw, "test");
    expect(await discoverStreams(t.redis, t.prefix)).toEqual([...STREAMS].sort());
    expect(await findDeadLetterStreams(t.redis, t.prefix)).toEqual(["role:r3"]);
    // With a cluster the streams are spread out: every master holds some.
    const servers = await mastersOf(t.redis);
    if (servers.length > 1) {
      const perServer = await Promise.all(servers.map((server) => server.scan("0", "MATCH", `${t.prefix}*`, "COUNT", 1000).then(([, keys]) => keys.length)));
      expect(perServer.filter((n) => n > 0).length).toBeGreaterThan(1);
    }
  });

  it("deletes every key under a pattern, whatever slot it is in", async () => {
    await bus.publish(STREAMS.map((stream, i) => ({ stream, envelope: envelope(`e${i}`) })));
    expect(await deleteKeys(t.redis, `${t.prefix}*`)).toBe(STREAMS.length);
    const left: string[] = [];
    for await (const keys of scanKeys(t.redis, `${t.prefix}*`)) left.push(...keys);
    expect(left).toEqual([]);
  });
});
