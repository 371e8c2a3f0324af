/**
 * What a harness turn costs with its RESULT and the XACK of its WORK in one round trip (`Bus.publishAndAck`, one
 * Lua script) against the two awaited writes it used before (XADD, then XACK). Same process, same Redis, the two
 * alternating round by round; a no-op handler, concurrency 100 as in (a) unless `--concurrency N`. Prints turns/s
 * and CPU per turn of this process (the harness) and of Redis.
 * `npx tsx bench/harness-turn-cost.ts [--turns N] [--rounds N] [--concurrency N]`; figures in bench/README.md
 * ("issue 11 hot path").
 */
import { randomBytes, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { Redis } from "ioredis";
import { BusAuth } from "../src/bus/auth/bus-auth.js";
import type { Bus } from "../src/bus/bus.js";
import { COORDINATOR_ENDPOINT, createEnvelope, encodeEnvelope, EndpointKind, EnvelopeKind, jsonPayload } from "../src/bus/codec.js";
import { createRedisBus } from "../src/bus/redis-bus.js";
import { loadConfig } from "../src/config/index.js";
import { createHarness, HARNESS_GROUP } from "../src/harness/index.js";
import { BENCH_BUS_SECRETS, unlinkByPrefix } from "./support.js";
import { noopHandler } from "./scenarios/noop-handler.js";

const MAX_PAYLOAD = 1024 * 1024;
const argv = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const at = argv.indexOf(name);
  return at >= 0 ? Number(argv[at + 1]) : fallback;
};
const TURNS = option("--turns", 20_000);
const ROUNDS = option("--rounds", 3);
/** 1 shows the round trips themselves: each turn waits for its own writes before the next WORK is taken. */
const CONCURRENCY = option("--concurrency", 100);

type Mode = "one-script" | "two-writes";

/** The bus as the harness used it before: the RESULT awaited, then the XACK. */
function twoWrites(bus: Bus): Bus {
  return {
    ...bus,
    async publishAndAck(items, target) {
      await bus.publishEncoded(items);
      await bus.ack(target.stream, target.group, target.ids);
    },
  };
}

async function redisCpuMs(redis: Redis): Promise<number> {
  const info = await redis.info("cpu");
  const seconds = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? 0);
  return (seconds("used_cpu_sys") + seconds("used_cpu_user")) * 1000;
}

async function round(redis: Redis, mode: Mode): Promise<{ turnsPerS: number; nodeUsPerTurn: number; redisUsPerTurn: number }> {
  const prefix = `bench:turn:${randomBytes(4).toString("hex")}:`;
  const base = createRedisBus({ redis, keyPrefix: prefix, maxPayloadBytes: MAX_PAYLOAD, maxDeliveries: 5 });
  const bus = mode === "one-script" ? base : twoWrites(base);
  try {
    await bus.ensureGroup("role:echo", HARNESS_GROUP);
    const work = Array.from({ length: TURNS }, () => ({ stream: "role:echo", data: encodeEnvelope(workEnvelope(), MAX_PAYLOAD) }));
    for (let i = 0; i < work.length; i += 1_000) await bus.publishEncoded(work.slice(i, i + 1_000));
    const harness = createHarness({
      bus,
      role: "echo",
      handler: noopHandler,
      signer: new BusAuth({ secrets: BENCH_BUS_SECRETS, maxPayloadBytes: MAX_PAYLOAD }).signer("role:echo"),
      concurrency: CONCURRENCY,
      maxPayloadBytes: MAX_PAYLOAD,
      reclaimIdleMs: 60_000,
      heartbeatMs: 10_000,
      shutdownGraceMs: 2_000,
      blockMs: 50,
    });
    const cpuBefore = process.cpuUsage();
    const redisBefore = await redisCpuMs(redis);
    const started = performance.now();
    const running = harness.start();
    while (harness.stats.completed < TURNS) await new Promise((resolve) => setTimeout(resolve, 5));
    const elapsedMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const redisMs = (await redisCpuMs(redis)) - redisBefore;
    await harness.close();
    await running;
    return { turnsPerS: (TURNS * 1000) / elapsedMs, nodeUsPerTurn: (cpu.user + cpu.system) / TURNS, redisUsPerTurn: (redisMs * 1000) / TURNS };
  } finally {
    await base.close();
    await unlinkByPrefix(redis, prefix);
  }
}

function workEnvelope() {
  return createEnvelope({
    id: randomUUID(),
    orgId: "bench-org",
    taskId: randomUUID(),
    stepId: "one",
    kind: EnvelopeKind.WORK,
    source: { ...COORDINATOR_ENDPOINT },
    destination: { kind: EndpointKind.ROLE, id: "echo" },
    attempt: 1,
    payload: jsonPayload({ input: {}, turn: 0 }),
    createdAtMs: BigInt(Date.now()),
  });
}

const redis = new Redis(loadConfig().redisUrl, { lazyConnect: true });
await redis.connect();
const results: Record<Mode, Array<Awaited<ReturnType<typeof round>>>> = { "one-script": [], "two-writes": [] };
const modes: Mode[] = ["two-writes", "one-script"];
// Warm-up of both, then measured rounds alternating which goes first.
for (const mode of modes) await round(redis, mode);
for (let r = 0; r < ROUNDS; r++) {
  for (const mode of r % 2 === 0 ? modes : [...modes].reverse()) {
    const result = await round(redis, mode);
    results[mode].push(result);
    console.log(`round ${r + 1} ${mode}: ${result.turnsPerS.toFixed(0)} turns/s, harness ${result.nodeUsPerTurn.toFixed(1)} µs/turn, redis ${result.redisUsPerTurn.toFixed(1)} µs/turn`);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const mode of modes) {
  const rs = results[mode];
  console.log(
    `${mode}: median ${median(rs.map((r) => r.turnsPerS)).toFixed(0)} turns/s, harness ${median(rs.map((r) => r.nodeUsPerTurn)).toFixed(1)} µs/turn, redis ${median(rs.map((r) => r.redisUsPerTurn)).toFixed(1)} µs/turn`,
  );
}
redis.disconnect();
