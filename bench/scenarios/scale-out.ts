/**
 * Scenario (g): scale-out over tenant shards. Like (b) governed-hops, coordinators drain a pre-filled inbox of
 * RESULTs (each: `result` of step one + `dispatch` of step two), but the coordinators are processes of their own
 * (coordinator-child.ts, as `switchyard start coordinator` builds them) and the tasks belong to 64 tenants, so the
 * RESULTs sit on the shards' inboxes. One round with 1 coordinator, one with 2 sharing the shards; each round's
 * clock starts once the shards are split among its coordinators (leases settled) and the RESULTs are written, and
 * stops once every RESULT is applied (audit rows) and every new WORK is published.
 *
 * Then the takeover: one of the 2 coordinators is killed (SIGKILL) and `shard_takeover_ms` is the time until every
 * shard it held is owned again (by the survivor, with a new token); its leases must expire first, so the target
 * is the lease TTL (`lease_ttl_ms`) plus one second.
 */
import { performance } from "node:perf_hooks";
import { streamKey } from "../../src/bus/keys.js";
import { listLeases, listMembers } from "../../src/store/shards/postgres-shard-store.js";
import { assignShards } from "../../src/coordinator/shard-ownership.js";
import { inboxOf } from "../../src/bus/shards.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { perSecond, type Measurement, type Scenario, type ScenarioContext } from "../support.js";
import { startCoordinatorProcess, type CoordinatorProcess } from "./coordinator-child.js";
import { prepareResults } from "./prefill.js";
import { createBenchSystem, pollUntil, type BenchSystem } from "./system.js";

const SIZES = { full: { results: 16_000 }, quick: { results: 3_000 } };
const TENANTS = Array.from({ length: 64 }, (_, i) => `scale-${i}`);

/** Coordinators stopped or killed already: stopping one again would write to a closed IPC channel. */
const finished = new WeakSet<CoordinatorProcess>();
async function stop(coordinator: CoordinatorProcess): Promise<void> {
  if (finished.has(coordinator)) return;
  finished.add(coordinator);
  await coordinator.stop();
}

const auditRows = async (system: BenchSystem): Promise<number> =>
  Number((await system.runtime.pool.query<{ n: string }>("SELECT count(*) AS n FROM audit_log")).rows[0]!.n);

/** Whether the live coordinators are exactly `consumers` and hold the rendezvous split among themselves. */
async function splitSettled(system: BenchSystem, consumers: readonly string[]): Promise<boolean> {
  const members = (await listMembers(system.runtime.pool)).map((m) => m.coordinatorId).sort();
  if (JSON.stringify(members) !== JSON.stringify([...consumers].sort())) return false;
  const leases = await listLeases(system.runtime.pool);
  const count = system.config.shards.count;
  return members.every((member) => {
    const want = assignShards(members, count, member);
    return want.every((shard) => leases[shard]?.live && leases[shard]?.owner === member);
  });
}

interface Round {
  hopsPerS: number;
  auditRows: number;
  drainMs: number;
  coordinators: CoordinatorProcess[];
}

async function drainRound(ctx: ScenarioContext, system: BenchSystem, coordinatorCount: number, count: number): Promise<Round> {
  const label = `${coordinatorCount} coordinator${coordinatorCount > 1 ? "s" : ""}`;
  const taskIds = await ctx.phase(`${label}: create + start ${count.toLocaleString("en-US")} tasks of ${TENANTS.length} tenants`, async () => {
    const ids = await system.createTasks(count, TENANTS);
    await system.startTasks(ids);
    return ids;
  });
  const results = await prepareResults(system, (orgId) => inboxOf(orgId, system.config.shards.count));
  if (results.count !== taskIds.length) throw new SwitchyardError(ErrorCode.Internal, `expected ${taskIds.length} WORK envelopes to answer, found ${results.count}`);
  const coordinators = await ctx.phase(`${label}: start processes, settle the shard split`, async () => {
    // Every tenant served (the live flags' defaults serve none), as in the a2a-callbacks scenario.
    const config = { ...system.config, flags: { ...system.config.flags, busEnabled: true, coordinatorEnabled: true, coordinatorTenants: "*" as const } };
    const started = await Promise.all(Array.from({ length: coordinatorCount }, () => startCoordinatorProcess(config)));
    ctx.defer(() => Promise.all(started.map((c) => stop(c).catch(() => {}))));
    const settled = await pollUntil(() => splitSettled(system, started.map((c) => `bench-coordinator-${c.pid}`)), ctx.signal, 50);
    if (!settled) throw new SwitchyardError(ErrorCode.Timeout, `the shards were not split among ${label} within the budget`);
    return started;
  });
  const workKey = streamKey(system.config.bus.keyPrefix, "role:echo");
  const baseline = await auditRows(system);
  const started = performance.now();
  const drained = await ctx.phase(`${label}: drain`, async () => {
    await results.publish();
    return pollUntil(async () => (await auditRows(system)) - baseline >= 2 * count && (await system.runtime.redis.xlen(workKey)) >= count, ctx.signal, 20);
  });
  const drainMs = performance.now() - started;
  const rows = (await auditRows(system)) - baseline;
  if (!drained) throw new SwitchyardError(ErrorCode.Timeout, `${label}: ${rows} of ${2 * count} audit rows within the budget`);
  return { hopsPerS: perSecond(rows, drainMs), auditRows: rows, drainMs, coordinators };
}

/** Kills one coordinator and measures until every shard it held is live under another owner. */
async function takeover(ctx: ScenarioContext, system: BenchSystem, victim: CoordinatorProcess): Promise<{ ms: number; shards: number }> {
  const id = `bench-coordinator-${victim.pid}`;
  const held = (await listLeases(system.runtime.pool)).filter((l) => l.live && l.owner === id).map((l) => l.shard);
  const killed = performance.now();
  finished.add(victim);
  process.kill(victim.pid, "SIGKILL");
  const moved = await ctx.phase(`takeover of ${held.length} shards`, () =>
    pollUntil(async () => {
      const leases = await listLeases(system.runtime.pool);
      return held.every((shard) => leases[shard]?.live && leases[shard]?.owner !== id);
    }, ctx.signal, 20),
  );
  if (!moved) throw new SwitchyardError(ErrorCode.Timeout, `the ${held.length} shards of a killed coordinator were not taken over within the budget`);
  return { ms: performance.now() - killed, shards: held.length };
}

export const scaleOutScenario: Scenario = {
  name: "scale-out",
  description: "(g) governed hops/s with 2 coordinator processes sharing the shards vs 1; shard takeover after kill -9",
  // Booting coordinator processes (tsx) dominates on a loaded box.
  budgetMs: { full: 300_000, quick: 240_000 },
  async run(ctx): Promise<Measurement[]> {
    const size = ctx.quick ? SIZES.quick : SIZES.full;
    const system = await ctx.phase("set up scratch database + runtime", () => createBenchSystem(ctx));
    const one = await drainRound(ctx, system, 1, size.results);
    await Promise.all(one.coordinators.map(stop));
    // Step two's WORK, published by the stopped coordinators: the next round's prefill must not answer it.
    await system.runtime.redis.unlink(streamKey(system.config.bus.keyPrefix, "role:echo"));
    ctx.log(`1 coordinator: ${Math.round(one.hopsPerS)} hops/s`);
    const two = await drainRound(ctx, system, 2, size.results);
    ctx.log(`2 coordinators: ${Math.round(two.hopsPerS)} hops/s`);
    const taken = await takeover(ctx, system, two.coordinators[0]!);
    ctx.log(`takeover: ${taken.shards} shards owned again ${Math.round(taken.ms)} ms after the kill`);
    await stop(two.coordinators[1]!);
    const ttl = system.config.shards.leaseTtlMs;
    const details = { results_per_round: size.results, tenants: TENANTS.length, shards: system.config.shards.count, hops_per_event: 2 };
    return [
      { name: "hops_per_s_1_coordinator", value: one.hopsPerS, unit: "hops/s", extra: { ...details, audit_rows: one.auditRows, drain_ms: Math.round(one.drainMs) } },
      {
        name: "hops_per_s_2_coordinators",
        value: two.hopsPerS,
        unit: "hops/s",
        extra: { ...details, audit_rows: two.auditRows, drain_ms: Math.round(two.drainMs), speedup_vs_1: Math.round((two.hopsPerS / one.hopsPerS) * 100) / 100 },
      },
      { name: "shard_takeover_ms", value: taken.ms, unit: "ms", extra: { shards_moved: taken.shards, target_ms: ttl + 1_000, met: taken.ms <= ttl + 1_000 } },
      { name: "lease_ttl_ms", value: ttl, unit: "ms" },
    ];
  },
};
