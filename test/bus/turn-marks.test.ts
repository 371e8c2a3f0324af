/**
 * Turn marks on real Redis: a first delivery's claim records `<attempt>:<turn>` under the stream's hash tag with a
 * TTL, and a reclaim asks whether a later turn of the same step has come since.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Bus, BusEntry } from "../../src/bus/bus.js";
import { createEnvelope, EndpointKind, EnvelopeKind, COORDINATOR_ENDPOINT, jsonPayload } from "../../src/bus/codec.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { TURN_MARK_TTL_MS } from "../../src/bus/turn-marks.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

let redis: TestRedis;
let bus: Bus;
let n = 0;
beforeEach(async () => {
  redis = await createTestRedis();
  bus = createRedisBus({ redis: redis.redis, keyPrefix: redis.prefix, maxPayloadBytes: 64 * 1024, maxDeliveries: 5 });
  await bus.ensureGroup("role:writer", "harness");
});
afterEach(async () => {
  await bus.close();
  await redis.cleanup();
});

const TASK = "5b0e4c1a-9f0e-4d5e-8a31-7c2b1d0e9f11";

async function entry(stepId: string, attempt: number, turn: number | undefined): Promise<BusEntry> {
  n += 1;
  const envelope = createEnvelope({
    id: `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
    orgId: "org-a",
    taskId: TASK,
    stepId,
    kind: EnvelopeKind.WORK,
    source: { ...COORDINATOR_ENDPOINT },
    destination: { kind: EndpointKind.ROLE, id: "writer" },
    attempt,
    payload: jsonPayload({ input: {}, turn: turn ?? 0 }),
    ...(turn !== undefined ? { turn } : {}),
    createdAtMs: BigInt(Date.now()),
  });
  await bus.publish([{ stream: "role:writer", envelope }]);
  const [read] = await bus.read({ stream: "role:writer", group: "harness", consumer: "c1", count: 1, blockMs: 0 });
  return read!;
}

describe("turn marks", () => {
  it("records a first delivery's attempt and turn under the stream's hash tag, with a TTL, only when asked", async () => {
    const first = await entry("draft", 2, 3);
    await bus.claimEnvelopes("role:writer", [first]);
    const key = `${redis.prefix}{role:writer}:turn:${TASK}/draft`;
    expect(await redis.redis.get(key)).toBeNull();
    await bus.claimEnvelopes("role:writer", [first], { recordTurns: true });
    expect(await redis.redis.get(key)).toBe("2:3");
    const ttl = await redis.redis.pttl(key);
    expect(ttl).toBeGreaterThan(TURN_MARK_TTL_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(TURN_MARK_TTL_MS);
  });

  it("says an entry is superseded only by a later attempt, or a later turn of its attempt, of the same step", async () => {
    const old = await entry("draft", 1, 4);
    const sameTurn = await entry("draft", 1, 4);
    const earlierTurn = await entry("draft", 1, 3);
    const laterAttemptEarlierTurn = await entry("draft", 2, 0);
    const otherStep = await entry("review", 1, 0);
    const unstamped = await entry("draft", 1, undefined);
    expect(await bus.supersededTurns("role:writer", [old, otherStep])).toEqual([false, false]);

    await bus.claimEnvelopes("role:writer", [await entry("draft", 1, 5)], { recordTurns: true });
    expect(await bus.supersededTurns("role:writer", [old, sameTurn, earlierTurn, otherStep, unstamped])).toEqual([true, true, true, false, false]);
    await bus.claimEnvelopes("role:writer", [laterAttemptEarlierTurn], { recordTurns: true });
    expect(await bus.supersededTurns("role:writer", [old, laterAttemptEarlierTurn])).toEqual([true, false]);
    expect(await bus.supersededTurns("role:writer", [])).toEqual([]);
  });

  it("reads a mark it cannot parse as no mark: the entry runs", async () => {
    const old = await entry("draft", 1, 0);
    await redis.redis.set(`${redis.prefix}{role:writer}:turn:${TASK}/draft`, "9:x");
    expect(await bus.supersededTurns("role:writer", [old])).toEqual([false]);
  });
});
