import { toBinary } from "@bufbuild/protobuf";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Bus, BusEntry } from "../../src/bus/bus.js";
import { createEnvelope, EndpointKind, EnvelopeKind, ResultStatus, type EnvelopeInit } from "../../src/bus/codec.js";
import { streamKey } from "../../src/bus/keys.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { ErrorCode } from "../../src/errors.js";
import { EnvelopeSchema } from "../../src/gen/switchyard/bus/v1/envelope_pb.js";
import { waitUntilBlocked } from "../support/bus.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";

const MAX_PAYLOAD = 1024;
let t: TestRedis;
let bus: Bus;

function envelope(id: string, overrides: Partial<EnvelopeInit> = {}) {
  return createEnvelope({ id, orgId: "org-1", taskId: "task-1", stepId: "step-1", kind: EnvelopeKind.WORK, ...overrides } as EnvelopeInit);
}

beforeEach(async () => {
  t = await createTestRedis();
  bus = createRedisBus({ redis: t.redis, keyPrefix: t.prefix, maxPayloadBytes: MAX_PAYLOAD, maxDeliveries: 3 });
});

afterEach(async () => {
  await bus.close();
  await t.cleanup();
});

describe("publish / read / ack", () => {
  it("round-trips every envelope field and clears the pending entry on ack", async () => {
    const full = createEnvelope({
      id: "env-1",
      orgId: "org-1",
      taskId: "task-1",
      stepId: "step-1",
      kind: EnvelopeKind.REPLY,
      source: { kind: EndpointKind.ROLE, id: "writer" },
      destination: { kind: EndpointKind.TEAM, id: "ops" },
      attempt: 2,
      clearanceFloor: 3,
      replyTo: { taskId: "task-0", stepId: "step-0", attempt: 1 },
      correlationId: "corr-1",
      delegationDepth: 4,
      payload: { data: new Uint8Array([0, 1, 2, 255, 254, 0, 10, 13]), contentType: "application/octet-stream" },
      usage: { cost: 1.25, inputTokens: 10n, outputTokens: 20n, durationMs: 30n },
      status: ResultStatus.ERROR,
      error: { code: "E_X", message: "boom", retryable: true },
      sourceStepId: "step-9",
      resultRef: "result:42",
      trace: { traceparent: "00-abc-def-01", tracestate: "k=v" },
      createdAtMs: 1_700_000_000_123n,
    });
    await bus.ensureGroup("role:writer", "workers");
    await bus.publish([{ stream: "role:writer", envelope: full }]);

    const entries = await bus.read({ stream: "role:writer", group: "workers", consumer: "c1", count: 10, blockMs: 0 });
    expect(entries).toHaveLength(1);
    expect(entries[0]!.stream).toBe("role:writer");
    expect(entries[0]!.id).toMatch(/^\d+-\d+$/);
    expect(entries[0]!.envelope).toEqual(full);
    expect(await bus.stats("role:writer", "workers")).toEqual({ length: 1, pending: 1, deadLetters: 0 });

    await bus.ack("role:writer", "workers", [entries[0]!.id]);
    expect(await bus.stats("role:writer", "workers")).toEqual({ length: 1, pending: 0, deadLetters: 0 });
    expect(await bus.read({ stream: "role:writer", group: "workers", consumer: "c1", count: 10, blockMs: 0 })).toEqual([]);
  });

  it("publishes a batch of 100 in order across streams", async () => {
    await bus.ensureGroup("role:writer", "g");
    await bus.ensureGroup("team:ops", "g");
    const items = Array.from({ length: 100 }, (_, i) => ({ stream: i % 2 === 0 ? "role:writer" : "team:ops", envelope: envelope(`e-${i}`) }));
    await bus.publish(items);

    const writer = await bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 100, blockMs: 0 });
    const ops = await bus.read({ stream: "team:ops", group: "g", consumer: "c", count: 100, blockMs: 0 });
    expect(writer.map((e) => e.envelope.id)).toEqual(items.filter((_, i) => i % 2 === 0).map((i) => i.envelope.id));
    expect(ops.map((e) => e.envelope.id)).toEqual(items.filter((_, i) => i % 2 === 1).map((i) => i.envelope.id));
  });

  it("rejects a batch with one invalid envelope before writing anything", async () => {
    const items = [
      { stream: "role:writer", envelope: envelope("ok-1") },
      { stream: "role:writer", envelope: envelope("bad", { orgId: "" }) },
    ];
    await expect(bus.publish(items)).rejects.toMatchObject({ code: ErrorCode.MalformedEnvelope, details: { index: 1 } });
    expect(await t.redis.exists(streamKey(t.prefix, "role:writer"))).toBe(0);
  });

  it("rejects an oversize payload at publish with PAYLOAD_TOO_LARGE", async () => {
    const big = envelope("big", { payload: { data: new Uint8Array(MAX_PAYLOAD + 1), contentType: "x" } });
    await expect(bus.publish([{ stream: "role:writer", envelope: envelope("small") }, { stream: "role:writer", envelope: big }])).rejects.toMatchObject({
      code: ErrorCode.PayloadTooLarge,
    });
    expect(await t.redis.exists(streamKey(t.prefix, "role:writer"))).toBe(0);
  });

  it("rejects bad stream names with INVALID_ARGUMENT", async () => {
    await expect(bus.publish([{ stream: "role:{evil}", envelope: envelope("x") }])).rejects.toMatchObject({ code: ErrorCode.InvalidArgument });
    await expect(bus.read({ stream: "", group: "g", consumer: "c", count: 1, blockMs: 0 })).rejects.toMatchObject({ code: ErrorCode.InvalidArgument });
  });
});

describe("entries that do not decode", () => {
  it("dead-letters garbage with its reason and bytes, acks it, and returns the entries after it", async () => {
    const key = streamKey(t.prefix, "role:writer");
    await bus.ensureGroup("role:writer", "g");
    await bus.publish([{ stream: "role:writer", envelope: envelope("before") }]);
    const garbage = Buffer.from([0xff, 0xff, 0xff, 0x07, 0x00, 0x80]);
    const garbageId = await t.redis.xadd(key, "*", "e", garbage);
    await bus.publish([{ stream: "role:writer", envelope: envelope("after") }]);

    const startedAt = Date.now();
    const entries = await bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 10, blockMs: 0 });
    expect(entries.map((e) => e.envelope.id)).toEqual(["before", "after"]);

    const dead = await bus.listDeadLetters("role:writer");
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ stream: "role:writer", originalId: garbageId, deliveries: 1 });
    expect(dead[0]!.reason).toMatch(/^MALFORMED_ENVELOPE: envelope does not decode/);
    expect(Buffer.from(dead[0]!.raw)).toEqual(garbage);
    expect(dead[0]!.atMs).toBeGreaterThanOrEqual(startedAt - 5);
    // Acked: only the two good entries are pending.
    expect(await bus.stats("role:writer", "g")).toEqual({ length: 3, pending: 2, deadLetters: 1 });
  });

  it("dead-letters an entry without the envelope field", async () => {
    await bus.ensureGroup("coordinator", "g");
    const id = await t.redis.xadd(streamKey(t.prefix, "coordinator"), "*", "other", "value");
    expect(await bus.read({ stream: "coordinator", group: "g", consumer: "c", count: 10, blockMs: 0 })).toEqual([]);
    const dead = await bus.listDeadLetters("coordinator");
    expect(dead.map((d) => [d.originalId, d.reason])).toEqual([[id, 'entry has no "e" field']]);
  });

  it("dead-letters an oversize entry written past the publisher's check", async () => {
    await bus.ensureGroup("role:writer", "g");
    const big = envelope("big", { payload: { data: new Uint8Array(MAX_PAYLOAD + 10), contentType: "x" } });
    const rawBytes = Buffer.from(toBinary(EnvelopeSchema, big));
    const id = await t.redis.xadd(streamKey(t.prefix, "role:writer"), "*", "e", rawBytes);
    await bus.publish([{ stream: "role:writer", envelope: envelope("fine") }]);

    const entries = await bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 10, blockMs: 0 });
    expect(entries.map((e) => e.envelope.id)).toEqual(["fine"]);
    const dead = await bus.listDeadLetters("role:writer");
    expect(dead).toHaveLength(1);
    expect(dead[0]!.originalId).toBe(id);
    expect(dead[0]!.reason).toMatch(/^PAYLOAD_TOO_LARGE/);
    expect(Buffer.from(dead[0]!.raw)).toEqual(rawBytes);
  });
});

describe("missing consumer group", () => {
  it("recreates the group after the stream key is deleted and keeps consuming", async () => {
    await bus.ensureGroup("role:writer", "g");
    await bus.publish([{ stream: "role:writer", envelope: envelope("one") }]);
    expect((await bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 10, blockMs: 0 })).map((e) => e.envelope.id)).toEqual(["one"]);

    await t.redis.del(streamKey(t.prefix, "role:writer"));
    expect(await bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 10, blockMs: 0 })).toEqual([]);
    await bus.publish([{ stream: "role:writer", envelope: envelope("two") }]);
    expect((await bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 10, blockMs: 0 })).map((e) => e.envelope.id)).toEqual(["two"]);
  });

  it("a read blocked when the stream key is deleted recreates the group and keeps waiting (Redis 7 UNBLOCKED)", async () => {
    // Redis >= 7 answers a blocked XREADGROUP whose key is deleted (DEL, FLUSHDB, a restart without data) with
    // "UNBLOCKED the stream key no longer exists"; it must be handled like NOGROUP, not surface as a failed read.
    await bus.ensureGroup("role:writer", "g");
    const blocked = bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 10, blockMs: 5_000 }).catch((error: unknown) => error);
    await waitUntilBlocked(t.redis);
    await t.redis.del(streamKey(t.prefix, "role:writer"));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await bus.publish([{ stream: "role:writer", envelope: envelope("after") }]);
    const outcome = await blocked;
    expect(outcome).not.toBeInstanceOf(Error);
    expect((outcome as BusEntry[]).map((e) => e.envelope.id)).toEqual(["after"]);
  });

  it("creates the group on first read of a stream that already has entries, from the start", async () => {
    await bus.publish([{ stream: "team:ops", envelope: envelope("early") }]);
    const entries = await bus.read({ stream: "team:ops", group: "late", consumer: "c", count: 10, blockMs: 50 });
    expect(entries.map((e) => e.envelope.id)).toEqual(["early"]);
  });

  it("ensureGroup is idempotent", async () => {
    await bus.ensureGroup("role:writer", "g");
    await bus.ensureGroup("role:writer", "g");
    const groups = (await t.redis.xinfo("GROUPS", streamKey(t.prefix, "role:writer"))) as unknown[];
    expect(groups).toHaveLength(1);
  });
});

describe("blocking reads", () => {
  it("returns promptly when the signal aborts, and the bus keeps working", async () => {
    await bus.ensureGroup("role:writer", "g");
    const controller = new AbortController();
    const startedAt = Date.now();
    setTimeout(() => controller.abort(), 100);
    const entries = await bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 1, blockMs: 20_000, signal: controller.signal });
    const elapsed = Date.now() - startedAt;
    expect(entries).toEqual([]);
    expect(elapsed).toBeGreaterThanOrEqual(90);
    expect(elapsed).toBeLessThan(1_000);

    await bus.publish([{ stream: "role:writer", envelope: envelope("next") }]);
    const next = await bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 1, blockMs: 1_000 });
    expect(next.map((e) => e.envelope.id)).toEqual(["next"]);
  });

  it("returns at once for an already aborted signal", async () => {
    const startedAt = Date.now();
    const entries = await bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 1, blockMs: 20_000, signal: AbortSignal.abort() });
    expect(entries).toEqual([]);
    expect(Date.now() - startedAt).toBeLessThan(200);
  });

  it("does not block publishes on the shared connection while waiting", async () => {
    await bus.ensureGroup("role:writer", "g");
    const pending = bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 5, blockMs: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const publishStartedAt = Date.now();
    await bus.publish([{ stream: "role:writer", envelope: envelope("wake") }]);
    expect(Date.now() - publishStartedAt).toBeLessThan(500);
    expect((await pending).map((e) => e.envelope.id)).toEqual(["wake"]);
  });
});

describe("close", () => {
  it("is idempotent, refuses further calls and leaves the caller's connection open", async () => {
    const blocked = bus.read({ stream: "role:writer", group: "g", consumer: "c", count: 1, blockMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const startedAt = Date.now();
    await Promise.all([bus.close(), bus.close()]);
    await bus.close();
    expect(await blocked).toEqual([]);
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    await expect(bus.publish([{ stream: "role:writer", envelope: envelope("x") }])).rejects.toMatchObject({ code: ErrorCode.FailedPrecondition });
    expect(await t.redis.ping()).toBe("PONG");
  });
});
