/**
 * The fault suite's monitor finds dead letters where the bus puts them, and keeps them after Redis lost them
 * (the Redis-restart fault erases the streams).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import type { Bus } from "../../src/bus/bus.js";
import { Monitor } from "../../faults/monitor.js";
import { createTestRedis, deleteByPrefix, type TestRedis } from "../support/redis.js";
import { redisUrl } from "../support/env.js";

describe("fault suite monitor", () => {
  let r: TestRedis;
  let bus: Bus;
  let monitor: Monitor;

  beforeAll(async () => {
    r = await createTestRedis();
    bus = createRedisBus({ redis: r.redis, keyPrefix: r.prefix, maxPayloadBytes: 1024, maxDeliveries: 3 });
    // Never queried here: the monitor connects to Postgres only when asked to.
    monitor = new Monitor({ databaseUrl: "postgres://postgres@127.0.0.1:1/none", redisUrl: redisUrl(), keyPrefix: r.prefix });
  });

  afterAll(async () => {
    await monitor.stop();
    await bus.close();
    await r.cleanup();
  });

  it("collects the bus's dead letters and keeps them once Redis has lost them", async () => {
    await bus.ensureGroup("role:split", "harness");
    await bus.publishEncoded([{ stream: "role:split", data: new Uint8Array([0xff, 0x00, 0x13]) }]);
    // An envelope that does not decode is dead-lettered by the read itself.
    expect(await bus.read({ stream: "role:split", group: "harness", consumer: "c", count: 10, blockMs: 0 })).toEqual([]);
    expect(await bus.listDeadLetters("role:split")).toHaveLength(1);

    await monitor.collectDeadLetters();
    expect([...monitor.deadLetters.values()]).toEqual([expect.objectContaining({ stream: "role:split", reason: expect.stringMatching(/\S/) })]);

    await deleteByPrefix(r.redis, r.prefix);
    await monitor.collectDeadLetters();
    expect(monitor.deadLetters.size).toBe(1);
  });
});
