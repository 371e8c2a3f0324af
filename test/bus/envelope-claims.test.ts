/**
 * Envelope claims on real Redis: the key they live under (the stream's hash tag, under the prefix, with a TTL),
 * what a second claim of one envelope answers, and a dead-letter replay releasing the claim so the replayed entry
 * runs instead of being taken for a duplicate.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Bus } from "../../src/bus/bus.js";
import { createEnvelope, EndpointKind, EnvelopeKind, COORDINATOR_ENDPOINT, jsonPayload } from "../../src/bus/codec.js";
import { ENVELOPE_CLAIM_TTL_MS } from "../../src/bus/envelope-claims.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

let redis: TestRedis;
let bus: Bus;
beforeEach(async () => {
  redis = await createTestRedis();
  bus = createRedisBus({ redis: redis.redis, keyPrefix: redis.prefix, maxPayloadBytes: 64 * 1024, maxDeliveries: 5 });
  await bus.ensureGroup("role:writer", "harness");
});
afterEach(async () => {
  await bus.close();
  await redis.cleanup();
});

function work(id: string) {
  return createEnvelope({
    id,
    orgId: "org-a",
    taskId: "task-1",
    stepId: "draft",
    kind: EnvelopeKind.WORK,
    source: { ...COORDINATOR_ENDPOINT },
    destination: { kind: EndpointKind.ROLE, id: "writer" },
    attempt: 1,
    payload: jsonPayload({ input: {}, turn: 2 }),
    createdAtMs: BigInt(Date.now()),
  });
}

async function readAll(consumer = "c1") {
  return bus.read({ stream: "role:writer", group: "harness", consumer, count: 10, blockMs: 0 });
}

describe("envelope claims", () => {
  it("answers, per entry, who held the claim before: nobody, the entry itself, or the first copy", async () => {
    const envelope = work("11111111-1111-4111-8111-111111111111");
    await bus.publish([{ stream: "role:writer", envelope }, { stream: "role:writer", envelope }]);
    const [first, second] = await readAll();
    expect(await bus.claimEnvelopes("role:writer", [first!, second!])).toEqual([null, first!.id]);
    // A redelivery of the entry that took the claim finds itself.
    expect(await bus.claimEnvelopes("role:writer", [first!])).toEqual([first!.id]);
    expect(await bus.claimEnvelopes("role:writer", [])).toEqual([]);

    const key = `${redis.prefix}{role:writer}:seen:${envelope.id}`;
    expect(await redis.redis.get(key)).toBe(first!.id);
    const ttl = await redis.redis.pttl(key);
    expect(ttl).toBeGreaterThan(ENVELOPE_CLAIM_TTL_MS - 60_000);
    expect(ttl).toBeLessThanOrEqual(ENVELOPE_CLAIM_TTL_MS);
  });

  it("releases the claim when the envelope's dead letter is replayed", async () => {
    const envelope = work("22222222-2222-4222-8222-222222222222");
    await bus.publish([{ stream: "role:writer", envelope }]);
    const [entry] = await readAll();
    expect(await bus.claimEnvelopes("role:writer", [entry!])).toEqual([null]);
    await bus.deadLetter("role:writer", "harness", entry!.id, entry!.raw, "crashed every worker");
    const [letter] = await bus.listDeadLetters("role:writer");

    expect(await bus.replayDeadLetters("role:writer", [letter!.id])).toBe(1);
    const [replayed] = await readAll();
    expect(replayed!.envelope.id).toBe(envelope.id);
    expect(replayed!.id).not.toBe(entry!.id);
    expect(await bus.claimEnvelopes("role:writer", [replayed!])).toEqual([null]);
  });
});
