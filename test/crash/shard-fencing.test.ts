/**
 * Fencing under a pause (issue 11): two coordinator processes share 16 shards while tasks of 12 tenants flow.
 *
 * 1. Coordinator A is paused with SIGSTOP past its lease. B must take every one of A's shards with new tokens within
 *    the TTL plus a few seconds and keep completing A's tenants' tasks; then A is continued.
 * 2. A is paused *inside* a transaction: the test holds a task row of A's locked, so A's batch for it (lease rows
 *    already share-locked by its fence) waits on it; A is stopped, the row released, and A's session sits idle in
 *    its transaction. Only `idle_in_transaction_session_timeout` (the lease TTL) ends it; B must still take over.
 *
 * Afterwards: no coordinator committed a write (audit row or step update) for a tenant whose shard it did not own
 * at that instant (test/crash/shards/write-log.ts attributes each write to its session), A counted the shards it
 * lost, every task completed with one dispatch and one accepted result per step, and every chain verifies.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listLeases } from "../../src/store/shards/postgres-shard-store.js";
import { shardInbox, shardOf } from "../../src/bus/shards.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { freePort } from "../support/ports.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForProgress, waitForTasks } from "../support/wait.js";
import { checkExactlyOnce } from "./shards/exactly-once.js";
import { Fleet, fleetEnv, leasesByOwner, tenantsOf, waitForSplit } from "./shards/fleet.js";
import { installWriteLog, serverNowMs, writesBy, writesByNonOwners } from "./shards/write-log.js";

const SHARDS = 16;
const TTL_MS = 2_000;
/** How long after the TTL a takeover may take: a round of B (a fifth of the TTL) plus a loaded box's slack. */
const TAKEOVER_SLACK_MS = 4_000;
const TENANTS = Array.from({ length: 12 }, (_, i) => `fence-${i}`);
const A = "fence-a";
const B = "fence-b";
const STEPS = 2;

describe("shard fencing under SIGSTOP", () => {
  let rt: TestRuntime;
  let fleet: Fleet;
  let metricsPort: number;
  let started = 0;
  let feeding = true;
  let feeder: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    rt = await createTestRuntime({ configure: (config) => ({ ...config, shards: { count: SHARDS, leaseTtlMs: TTL_MS } }) });
    await installWriteLog(rt.pool);
    metricsPort = await freePort();
    fleet = new Fleet(fleetEnv(rt, { count: SHARDS, leaseTtlMs: TTL_MS }));
    const workflow = parseWorkflowDefinition(`
name: pair
steps:
  - { id: one, to: "role:echo", timeout: 120s }
  - { id: two, to: "role:echo", needs: [one], timeout: 120s }
`);
    for (const tenant of TENANTS) await submitWorkflow(rt.pool, tenant, workflow);
  });

  afterAll(async () => {
    feeding = false;
    await feeder.catch(() => {});
    await fleet?.killAll();
    await rt?.cleanup();
  });

  /** Steady work: a task for each tenant in turn, about 40 a second, until stopped. */
  function feed(): void {
    feeder = (async () => {
      while (feeding) {
        await rt.tasks.start({ orgId: TENANTS[started % TENANTS.length]!, workflow: "pair", input: { i: started } });
        started++;
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
  }

  const completedOf = async (tenants: readonly string[]) =>
    (await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM tasks WHERE status = 'completed' AND org_id = ANY($1)", [tenants])).rows[0]!.n;

  async function lostOnA(): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const line = text.split("\n").find((l) => l.startsWith('switchyard_shard_moves_total{event="lost"}'));
    return line ? Number(line.split(" ").pop()) : 0;
  }

  /** Waits until B holds every shard of `held` with a newer token; returns how long that took from `sinceMs`. */
  async function waitForTakeover(held: ReadonlyMap<number, number>, sinceMs: number): Promise<number> {
    await waitForProgress({
      what: `${B} to take over shards ${[...held.keys()].join(", ")}`,
      progress: async () => {
        const byB = leasesByOwner(await listLeases(rt.pool)).get(B) ?? new Map<number, number>();
        return [...held].filter(([shard, token]) => (byB.get(shard) ?? 0) > token).length;
      },
      done: (taken) => taken === held.size,
      stallMs: TTL_MS + TAKEOVER_SLACK_MS,
      intervalMs: 50,
      describeStuck: async (taken) => `${taken} of ${held.size} taken; leases ${JSON.stringify(await listLeases(rt.pool))}\n${fleet.context()}`,
    });
    return Date.now() - sinceMs;
  }

  it("a paused coordinator's shards move with new tokens, and none of its writes commit after the takeover", { timeout: 10 * 60_000 }, async () => {
    fleet.coordinator(A, { SWITCHYARD_METRICS_PORT: String(metricsPort) });
    fleet.coordinator(B);
    fleet.harness("harness-0", "echo");
    fleet.harness("harness-1", "echo");
    let split = await waitForSplit(rt.pool, [A, B], SHARDS, () => fleet.context());
    const tenantsOfA = tenantsOf(TENANTS, split.get(A)!.keys(), SHARDS);
    expect(tenantsOfA.length, "A serves some tenants").toBeGreaterThan(0);
    expect(tenantsOf(TENANTS, split.get(B)!.keys(), SHARDS).length, "B serves some tenants").toBeGreaterThan(0);

    feed();
    // Work flows through A before the pause.
    await waitForProgress({ what: "A's tenants to complete tasks", progress: () => completedOf(tenantsOfA), done: (n) => n >= 10, stallMs: 120_000, describeStuck: () => fleet.context() });

    // --- 1. paused between transactions ---
    const heldByA = split.get(A)!;
    const stoppedAt = Date.now();
    fleet.get(A).child.kill("SIGSTOP");
    const takeoverMs = await waitForTakeover(heldByA, stoppedAt);
    expect(takeoverMs, "takeover after the pause began").toBeLessThanOrEqual(TTL_MS + TAKEOVER_SLACK_MS);
    const takenAt = await serverNowMs(rt.pool);
    // B keeps A's tenants going while A is still stopped.
    const completedAtTakeover = await completedOf(tenantsOfA);
    await waitForProgress({ what: "B to complete A's tenants' tasks", progress: () => completedOf(tenantsOfA), done: (n) => n >= completedAtTakeover + 10, stallMs: 30_000, describeStuck: () => fleet.context() });
    const writes = await writesBy(rt.pool, tenantsOfA, takenAt, await serverNowMs(rt.pool));
    expect(writes.get(A) ?? 0, "writes by A while it is stopped").toBe(0);
    expect(writes.get(B) ?? 0, "writes by B for A's tenants").toBeGreaterThan(0);
    fleet.get(A).child.kill("SIGCONT");
    // A finds its leases gone on its next round and counts them lost; then the split is restored by hand-overs.
    await waitForProgress({ what: "A to count its shards lost", progress: lostOnA, done: (n) => n >= heldByA.size, describeStuck: (n) => `lost ${n}\n${fleet.context()}` });
    split = await waitForSplit(rt.pool, [A, B], SHARDS, () => fleet.context(), 30_000);

    // --- 2. paused inside a transaction ---
    const victimTenant = tenantsOf(TENANTS, split.get(A)!.keys(), SHARDS)[0]!;
    const lock = await rt.pool.connect();
    let stuckBackend: number | undefined;
    try {
      const task = await rt.tasks.start({ orgId: victimTenant, workflow: "pair", input: { locked: true } });
      started++;
      await lock.query("BEGIN");
      await lock.query("SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", [task.taskId]);
      // The step's RESULT reaches A, whose batch proves its fence and then waits for the task row.
      stuckBackend = await waitForProgress({
        what: "A's batch to wait on the locked task",
        progress: async () =>
          (await rt.pool.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' AND datname = current_database()",
            [`switchyard-coordinator ${A}`],
          )).rows[0]?.pid,
        done: (pid) => pid !== undefined,
        stallMs: 30_000,
        describeStuck: () => fleet.context(),
      });
      fleet.get(A).child.kill("SIGSTOP");
    } finally {
      await lock.query("COMMIT").catch(() => {});
      lock.release();
    }
    const pausedAt = Date.now();
    // The statement finishes; the stopped process never sends the next one.
    const state = await waitForProgress({
      what: "A's session to sit idle in its transaction",
      progress: async () => (await rt.pool.query<{ state: string }>("SELECT state FROM pg_stat_activity WHERE pid = $1", [stuckBackend])).rows[0]?.state ?? "gone",
      done: (s) => s === "idle in transaction" || s === "gone",
      stallMs: 5_000,
    });
    expect(state, "A's session, stopped mid-transaction").toBe("idle in transaction");
    const heldInTransaction = split.get(A)!;
    await waitForTakeover(heldInTransaction, pausedAt);
    const gone = (await rt.pool.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [stuckBackend])).rowCount;
    expect(gone, "Postgres ended A's idle transaction").toBe(0);
    fleet.get(A).child.kill("SIGCONT");

    await new Promise((r) => setTimeout(r, 2_000));
    feeding = false;
    await feeder;
    await waitForTasks(rt.pool, { expected: started, stallMs: 60_000, intervalMs: 500 }).catch((error) => {
      throw new Error(`${(error as Error).message}\n${fleet.context()}`);
    });

    expect(await writesByNonOwners(rt.pool, SHARDS), "writes committed by a coordinator that did not own the tenant's shard").toEqual([]);
    await checkExactlyOnce(rt.pool, { tasks: started, steps: STEPS });
    for (const tenant of TENANTS) expect(await verifyChain(rt.stores.audit, rt.pool, tenant), `chain of ${tenant}`).toMatchObject({ ok: true });
    for (const shard of new Set(TENANTS.map((t) => shardOf(t, SHARDS)))) {
      expect(await rt.bus.listDeadLetters(shardInbox(shard)), `dead letters on shard ${shard}`).toEqual([]);
    }
    console.info(`shard fencing: ${started} tasks; ${heldByA.size} shards taken over ${takeoverMs} ms after the pause (TTL ${TTL_MS} ms)`);
  });
});
