/**
 * A Redis bus on a fresh key prefix for each test of a file (hooks registered by `useTestBus`), and a plain WORK
 * envelope to put on it.
 */
import { afterEach, beforeEach } from "vitest";
import type { Bus } from "../../src/bus/bus.js";
import { createEnvelope, EnvelopeKind, type Envelope, type EnvelopeInit } from "../../src/bus/codec.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { mastersOf, type RedisClient } from "../../src/bus/redis-connection.js";
import { createTestRedis, type TestRedis } from "./redis.js";

export interface TestBus {
  /** The current test's Redis and prefix. */
  readonly t: TestRedis;
  readonly bus: Bus;
}

export function useTestBus(options: { maxPayloadBytes?: number; maxDeliveries?: number } = {}): TestBus {
  let t: TestRedis | undefined;
  let bus: Bus | undefined;
  beforeEach(async () => {
    t = await createTestRedis();
    bus = createRedisBus({ redis: t.redis, keyPrefix: t.prefix, maxPayloadBytes: options.maxPayloadBytes ?? 1024, maxDeliveries: options.maxDeliveries ?? 3 });
  });
  afterEach(async () => {
    await bus?.close();
    await t?.cleanup();
  });
  return {
    get t() {
      return t!;
    },
    get bus() {
      return bus!;
    },
  };
}

export function workEnvelope(id: string): Envelope {
  return createEnvelope({ id, orgId: "org-1", taskId: "task-1", stepId: "step-1", kind: EnvelopeKind.WORK } as EnvelopeInit);
}

/** Waits until `n` connections of this Redis (on any master of a cluster) are blocked in XREADGROUP. */
export async function waitUntilBlocked(redis: RedisClient, n = 1): Promise<void> {
  const servers = await mastersOf(redis);
  for (let i = 0; i < 200; i++) {
    const lists = await Promise.all(servers.map((server) => server.client("LIST") as Promise<string>));
    const blocked = lists.join("\n").split("\n").filter((line) => / flags=b /.test(line) && / cmd=xreadgroup /.test(line));
    if (blocked.length >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`fewer than ${n} XREADGROUPs became blocked`);
}
