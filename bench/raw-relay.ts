/**
 * Baseline (c): the fastest thing our hop could be on this Redis. One loop moves entries from a source stream to a
 * destination stream — XREADGROUP COUNT 100, then one pipeline of XADD per entry plus one XACK — with no
 * governance, no Postgres and no decoding. A governed hop can only approach this figure; the ratio says how much
 * the choke-point costs.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { ErrorCode, SwitchyardError } from "../src/errors.js";
import { perSecond, startStopwatch, summarize, type Measurement, type Scenario, type ScenarioContext } from "./support.js";

const BATCH = 100;
const PAYLOAD_BYTES = 200;
const PREFILL_CHUNK = 1_000;
const GROUP = "relay";
const CONSUMER = "relay-1";

// The figure is the median of `runs` measured rounds: one ~1 s round on a shared 2-core box varies by ±15%.
const SIZES = {
  full: { warmup: 10_000, entries: 100_000, runs: 3 },
  quick: { warmup: 2_000, entries: 10_000, runs: 1 },
};

interface Streams {
  source: string;
  destination: string;
}

/** Writes `count` entries of one opaque ~200-byte field (like an encoded envelope) and creates the group. */
async function prefill(redis: Redis, streams: Streams, count: number): Promise<void> {
  // Binary, like a protobuf envelope; the index in the first bytes keeps entries distinct.
  const payload = randomBytes(PAYLOAD_BYTES);
  for (let written = 0; written < count; written += PREFILL_CHUNK) {
    const pipeline = redis.pipeline();
    for (let i = written; i < Math.min(count, written + PREFILL_CHUNK); i++) {
      const entry = Buffer.from(payload);
      entry.writeUInt32BE(i, 0);
      pipeline.xadd(streams.source, "*", "e", entry);
    }
    throwOnPipelineError(await pipeline.exec());
  }
  await redis.xgroup("CREATE", streams.source, GROUP, "0", "MKSTREAM");
}

type StreamReply = Array<[Buffer, Array<[Buffer, Buffer[]]>]> | null;

/** Relays until the source yields nothing new (drained) or `signal` aborts; returns the entries moved. */
async function relay(redis: Redis, streams: Streams, signal: AbortSignal): Promise<number> {
  let moved = 0;
  while (!signal.aborted) {
    // No BLOCK: the stream is pre-filled, so an empty read means drained.
    const reply = (await redis.callBuffer("XREADGROUP", "GROUP", GROUP, CONSUMER, "COUNT", BATCH, "STREAMS", streams.source, ">")) as StreamReply;
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length === 0) break;
    const pipeline = redis.pipeline();
    const ids: Buffer[] = [];
    for (const [id, fields] of entries) {
      pipeline.xadd(streams.destination, "*", ...fields);
      ids.push(id);
    }
    pipeline.xack(streams.source, GROUP, ...ids);
    throwOnPipelineError(await pipeline.exec());
    moved += entries.length;
  }
  return moved;
}

function throwOnPipelineError(results: Array<[Error | null, unknown]> | null): void {
  const failed = results?.find(([error]) => error);
  if (failed) throw new SwitchyardError(ErrorCode.Unavailable, `redis pipeline failed: ${failed[0]!.message}`, { cause: failed[0] });
}

/** The relay is only a baseline if it moved everything exactly once. */
async function verify(redis: Redis, streams: Streams, expected: number): Promise<void> {
  const [length, pending] = await Promise.all([redis.xlen(streams.destination), redis.xpending(streams.source, GROUP)]);
  const pendingCount = Number((pending as [number | string])[0]);
  if (length !== expected || pendingCount !== 0) {
    throw new SwitchyardError(ErrorCode.Internal, `raw relay moved ${length}/${expected} entries with ${pendingCount} left pending`);
  }
}

async function round(ctx: ScenarioContext, redis: Redis, label: string, count: number): Promise<{ moved: number; relayMs: number }> {
  const slug = label.replace(/[^a-z0-9]+/gi, "-");
  const streams = { source: `${ctx.keyPrefix}${slug}:src`, destination: `${ctx.keyPrefix}${slug}:dst` };
  await ctx.phase(`${label}: prefill ${count.toLocaleString("en-US")} entries`, () => prefill(redis, streams, count));
  const watch = startStopwatch();
  const moved = await ctx.phase(`${label}: relay`, () => relay(redis, streams, ctx.signal));
  const relayMs = watch.elapsedMs();
  if (!ctx.signal.aborted) await verify(redis, streams, count);
  // Free the memory before the next round; the runner deletes the prefix again afterwards.
  await redis.unlink(streams.source, streams.destination);
  return { moved, relayMs };
}

export const rawRelayScenario: Scenario = {
  name: "raw-relay",
  description: "baseline (c): XREADGROUP COUNT 100 → pipelined XADD + XACK, no governance",
  budgetMs: { full: 45_000, quick: 15_000 },
  async run(ctx): Promise<Measurement[]> {
    const size = ctx.quick ? SIZES.quick : SIZES.full;
    const redis = new Redis(ctx.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 3 });
    ctx.defer(() => redis.disconnect());
    await redis.connect();

    await round(ctx, redis, "warm-up", size.warmup);
    const rates: number[] = [];
    for (let run = 1; run <= size.runs && !ctx.signal.aborted; run++) {
      const { moved, relayMs } = await round(ctx, redis, `run ${run}/${size.runs}`, size.entries);
      if (moved > 0) rates.push(perSecond(moved, relayMs));
    }
    return [
      {
        name: "raw_relay_hops_per_s",
        value: summarize(rates).p50,
        unit: "hops/s",
        extra: {
          entries_per_run: size.entries,
          runs: rates.map(Math.round),
          batch: BATCH,
          payload_bytes: PAYLOAD_BYTES,
          consumers: 1,
          partial: ctx.signal.aborted,
        },
      },
    ];
  },
};
