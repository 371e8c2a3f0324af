/**
 * A running harness process serves /metrics on SWITCHYARD_METRICS_PORT; after real turns its counters moved by
 * exactly the turns it ran: by outcome (non-retryable failures apart), durations, in flight, read lag, heartbeats.
 */
import { testBusAuth } from "../support/bus-auth.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { EnvelopeKind, type Envelope } from "../../src/bus/codec.js";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { defaultConfig, type Config } from "../../src/config/index.js";
import { silentLogger } from "../../src/logger.js";
import { runHarnessProcess } from "../../src/harness/process.js";
import { workEnvelope } from "../harness/fixtures.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { redisUrl } from "../support/env.js";
import { freePort } from "../support/ports.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";
import { waitForProgress } from "../support/wait.js";
import { armHold } from "./fixtures/turns-handler.js";
import { parseSamples, sampleValue, type Sample } from "./prometheus.js";

const STREAM = { stream: "role:echo" };

describe("harness /metrics", () => {
  let redis: TestRedis;
  let db: TestDatabase;
  let port: number;
  const stop = new AbortController();
  let running: Promise<void>;
  let bus: ReturnType<typeof createRedisBus>;
  const sent: Envelope[] = [];

  beforeAll(async () => {
    redis = await createTestRedis();
    db = await createTestDatabase();
    port = await freePort();
    const config: Config = {
      ...defaultConfig,
      redisUrl: redisUrl(),
      databaseUrl: db.url,
      bus: { ...defaultConfig.bus, keyPrefix: redis.prefix, blockMs: 100 },
      harness: { shutdownGraceMs: 1_000, heartbeatMs: 1_000 },
      metrics: { host: "127.0.0.1", port },
      busAuth: { secrets: [], publisherKeys: [testBusAuth().publisherKey("role:echo")] },
    };
    running = runHarnessProcess({ config, role: "echo", handlerPath: "test/metrics/fixtures/turns-handler.ts", concurrency: 4, logger: silentLogger, signal: stop.signal });
    bus = createRedisBus({ redis: redis.redis, keyPrefix: redis.prefix, maxPayloadBytes: config.bus.maxPayloadBytes, maxDeliveries: 5 });
    await bus.ensureGroup(COORDINATOR_STREAM, "observer");
  });

  afterAll(async () => {
    stop.abort();
    await running;
    await bus.close();
    await redis.cleanup();
    await db.drop();
  });

  async function scrape(): Promise<Sample[]> {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      return response.ok ? parseSamples(await response.text()) : [];
    } catch {
      return []; // not listening yet
    }
  }

  async function collectOutcomes(count: number): Promise<void> {
    await waitForProgress({
      what: `${count} outcomes on the coordinator inbox`,
      progress: async () => {
        const entries = await bus.read({ stream: COORDINATOR_STREAM, group: "observer", consumer: "o", count: 50, blockMs: 100 });
        sent.push(...entries.map((e) => e.envelope));
        // Heartbeats go to the inbox too; only RESULTs are outcomes.
        return sent.filter((e) => e.kind === EnvelopeKind.RESULT).length;
      },
      done: (results) => results >= count,
    });
  }

  it("counts turns by outcome, their duration, read lag and heartbeats", async () => {
    await waitForProgress({ what: "the metrics endpoint", progress: scrape, done: (s) => sampleValue(s, "switchyard_harness_turns_in_flight", STREAM) === 0, key: (s) => String(s.length) });
    const before = await scrape();
    expect(sampleValue(before, "switchyard_harness_turns_total", { ...STREAM, outcome: "completed" })).toBeUndefined();

    const old = workEnvelope({ input: { mode: "ok" } });
    old.createdAtMs = BigInt(Date.now() - 5_000); // queued 5 s before any harness read it
    const works = [old, workEnvelope({ input: { mode: "ok" } }), workEnvelope({ input: { mode: "heartbeat" } }), workEnvelope({ input: { mode: "retry" } }), workEnvelope({ input: { mode: "final" } })];
    await bus.publish(works.map((envelope) => ({ stream: "role:echo", envelope })));
    await collectOutcomes(works.length);

    const after = await waitForProgress({ what: "five turns counted", progress: scrape, done: (s) => turnsCounted(s) >= 5, key: (s) => String(turnsCounted(s)) });
    expect(sampleValue(after, "switchyard_harness_turns_total", { ...STREAM, outcome: "completed" })).toBe(3);
    expect(sampleValue(after, "switchyard_harness_turns_total", { ...STREAM, outcome: "failed" })).toBe(1);
    expect(sampleValue(after, "switchyard_harness_turns_total", { ...STREAM, outcome: "non_retryable" })).toBe(1);
    expect(sampleValue(after, "switchyard_harness_turn_seconds_count", { ...STREAM, outcome: "completed" })).toBe(3);
    expect(sampleValue(after, "switchyard_harness_turn_seconds_count", { ...STREAM, outcome: "non_retryable" })).toBe(1);
    expect(sampleValue(after, "switchyard_harness_heartbeats_total", STREAM)).toBe(2);
    expect(sampleValue(after, "switchyard_harness_read_lag_seconds_count", STREAM)).toBe(5);
    expect(sampleValue(after, "switchyard_harness_read_lag_seconds_sum", STREAM)).toBeGreaterThanOrEqual(5);
    expect(sampleValue(after, "switchyard_harness_read_lag_seconds_bucket", { ...STREAM, le: "1" })).toBe(4);
    expect(sampleValue(after, "switchyard_harness_turns_in_flight", STREAM)).toBe(0);
  });

  it("shows a running turn in flight until it ends", async () => {
    const release = armHold();
    await bus.publish([{ stream: "role:echo", envelope: workEnvelope({ input: { mode: "hold" } }) }]);
    await waitForProgress({ what: "one turn in flight", progress: scrape, done: (s) => sampleValue(s, "switchyard_harness_turns_in_flight", STREAM) === 1, key: (s) => String(sampleValue(s, "switchyard_harness_turns_in_flight", STREAM)) });
    release();
    const done = await waitForProgress({ what: "the held turn to end", progress: scrape, done: (s) => sampleValue(s, "switchyard_harness_turns_in_flight", STREAM) === 0, key: (s) => String(sampleValue(s, "switchyard_harness_turns_in_flight", STREAM)) });
    expect(sampleValue(done, "switchyard_harness_turns_total", { ...STREAM, outcome: "completed" })).toBe(4);
  });
});

function turnsCounted(samples: readonly Sample[]): number {
  return samples.filter((s) => s.name === "switchyard_harness_turns_total" && s.labels.stream === "role:echo").reduce((sum, s) => sum + s.value, 0);
}
