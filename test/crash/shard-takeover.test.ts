/**
 * Shard takeover under kill -9 (issue 11): three coordinator processes share 16 shards of 12 tenants while
 * fan-out/fan-in tasks run; one coordinator at a time is SIGKILLed and restarted (the next kill once it holds its share again). Each kill must be
 * followed by every shard being owned again (the dead one's leases expire and the others take them, then the
 * restarted one gets its share back). Afterwards: every task completed, each step dispatched and accepted exactly
 * once (0 lost, 0 doubled), no dead letters, every chain verifies, the outbox drains.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { seededRandom } from "../../faults/random.js";
import { listLeases } from "../../src/store/shards/postgres-shard-store.js";
import { shardInbox, shardOf } from "../../src/bus/shards.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { kill } from "../support/processes.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForProgress, waitForTasks } from "../support/wait.js";
import { checkExactlyOnce } from "./shards/exactly-once.js";
import { Fleet, fleetEnv, leasesByOwner, waitForSplit } from "./shards/fleet.js";

const SHARDS = 16;
const TTL_MS = 2_000;
const TENANTS = Array.from({ length: 12 }, (_, i) => `takeover-${i}`);
const COORDINATORS = ["take-0", "take-1", "take-2"];
const KILL_ROUNDS = 4;
const TASKS_PER_ROUND = 20;
const STEPS = 5;

describe("shard takeover under kill -9", () => {
  let rt: TestRuntime;
  let fleet: Fleet;

  beforeAll(async () => {
    rt = await createTestRuntime({ configure: (config) => ({ ...config, shards: { count: SHARDS, leaseTtlMs: TTL_MS } }) });
    fleet = new Fleet(fleetEnv(rt, { count: SHARDS, leaseTtlMs: TTL_MS }));
    const workflow = parseWorkflowDefinition(`
name: fan
steps:
  - { id: split, to: "role:echo", timeout: 120s }
  - { id: left, to: "role:echo", needs: [split], timeout: 120s }
  - { id: middle, to: "role:echo", needs: [split], timeout: 120s }
  - { id: right, to: "role:echo", needs: [split], timeout: 120s }
  - { id: join, to: "role:echo", needs: [left, middle, right], timeout: 120s }
`);
    for (const tenant of TENANTS) await submitWorkflow(rt.pool, tenant, workflow);
  });

  afterAll(async () => {
    await fleet?.killAll();
    await rt?.cleanup();
  });

  it(`completes every fan-out task exactly once through ${KILL_ROUNDS} coordinator kills`, { timeout: 10 * 60_000 }, async () => {
    const seed = Number(process.env.CRASH_SEED ?? Date.now() % 100_000);
    const rand = seededRandom(seed);
    const context = () => `seed ${seed}\n${fleet.context()}`;
    for (const name of COORDINATORS) fleet.coordinator(name);
    fleet.harness("harness-0", "echo");
    fleet.harness("harness-1", "echo");
    const split = await waitForSplit(rt.pool, COORDINATORS, SHARDS, context);
    for (const name of COORDINATORS) expect(split.get(name)?.size ?? 0, `shards of ${name}`).toBeGreaterThan(0);

    let started = 0;
    const startTasks = async (n: number) => {
      await Promise.all(Array.from({ length: n }, () => rt.tasks.start({ orgId: TENANTS[started % TENANTS.length]!, workflow: "fan", input: { i: started++ } })));
    };
    const inFlightAtKill: number[] = [];
    const takeoverMs: number[] = [];
    const victims: string[] = [];
    for (let round = 0; round < KILL_ROUNDS; round++) {
      await startTasks(TASKS_PER_ROUND);
      await new Promise((r) => setTimeout(r, 200 + rand() * 600));
      // On a quiet box the round's tasks may all be done by now: a few more, started just before the kill, put it
      // on work in flight whatever the machine's speed.
      await startTasks(3);
      inFlightAtKill.push((await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM steps WHERE status <> 'completed'")).rows[0]!.n);
      // Each in turn; all three hold their share now (the split was restored after the last restart), so two
      // survivors are there to take the victim's shards.
      const victim = COORDINATORS[round % COORDINATORS.length]!;
      const held = leasesByOwner(await listLeases(rt.pool)).get(victim) ?? new Map<number, number>();
      expect(held.size, `shards of ${victim} before its kill`).toBeGreaterThan(0);
      victims.push(`${victim} (${held.size} shards)`);
      const killedAt = Date.now();
      await kill(fleet.get(victim));
      fleet.coordinator(victim);
      // Every shard the victim held is owned again (by a survivor, or by the restarted victim) with a new token.
      await waitForProgress({
        what: `the shards of ${victim} to be owned again`,
        progress: async () => {
          const leases = await listLeases(rt.pool);
          return [...held].filter(([shard, token]) => leases.some((l) => l.shard === shard && l.live && l.token > token)).length;
        },
        done: (owned) => owned === held.size,
        stallMs: 30_000,
        intervalMs: 50,
        describeStuck: async (owned) => `${owned} of ${held.size}; leases ${JSON.stringify(await listLeases(rt.pool))}\n${context()}`,
      });
      takeoverMs.push(Date.now() - killedAt);
      // The restarted victim boots (slow on a loaded box) and gets its share back by hand-overs.
      await waitForSplit(rt.pool, COORDINATORS, SHARDS, context);
    }
    expect(inFlightAtKill.every((n) => n > 0), `work in flight at each kill: ${inFlightAtKill.join(", ")}`).toBe(true);

    await waitForTasks(rt.pool, { expected: started, stallMs: 60_000, intervalMs: 500 }).catch((error) => {
      throw new Error(`${(error as Error).message}\n${context()}`);
    });
    await checkExactlyOnce(rt.pool, { tasks: started, steps: STEPS });
    for (const tenant of TENANTS) expect(await verifyChain(rt.stores.audit, rt.pool, tenant), `chain of ${tenant}`).toMatchObject({ ok: true });
    for (const shard of new Set(TENANTS.map((t) => shardOf(t, SHARDS)))) {
      expect(await rt.bus.listDeadLetters(shardInbox(shard)), `dead letters on shard ${shard}`).toEqual([]);
    }
    expect(await rt.bus.listDeadLetters("role:echo"), "dead letters on role:echo").toEqual([]);
    const outbox = await waitForProgress({
      what: "the outbox to drain",
      progress: async () => (await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox")).rows[0]!.n,
      done: (rows) => rows === 0,
      describeStuck: (rows) => `${rows} outbox rows unpublished\n${context()}`,
    });
    expect(outbox).toBe(0);
    console.info(`shard takeover, seed ${seed}: ${started} tasks; in flight at each kill ${inFlightAtKill.join(", ")}; killed ${victims.join(", ")}; shards owned again after ${takeoverMs.join(", ")} ms`);
  });
});
