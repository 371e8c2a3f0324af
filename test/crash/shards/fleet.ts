/**
 * Named coordinator processes (`start coordinator --consumer NAME`) and echo harnesses for the shard crash tests,
 * and waits on the shard split as `shard_leases` shows it.
 */
import { listLeases, type LeaseRow } from "../../../src/store/shards/postgres-shard-store.js";
import { assignShards } from "../../../src/coordinator/shard-ownership.js";
import { shardOf } from "../../../src/bus/shards.js";
import type { Queryable } from "../../../src/store/db.js";
import { TEST_BUS_SECRET_ENV } from "../../support/bus-auth.js";
import { FLAGS_ON_ENV } from "../../support/env.js";
import { kill, spawnCli, type ManagedProcess } from "../../support/processes.js";
import type { TestRuntime } from "../../support/runtime.js";
import { waitForProgress } from "../../support/wait.js";

/** The processes' environment: the test's database, Redis and prefix, these shards, fast sweeps and reclaims. */
export function fleetEnv(rt: TestRuntime, shards: { count: number; leaseTtlMs: number }): Record<string, string> {
  return {
    ...FLAGS_ON_ENV,
    DATABASE_URL: rt.config.databaseUrl,
    REDIS_URL: rt.config.redisUrl,
    SWITCHYARD_KEY_PREFIX: rt.prefix,
    SWITCHYARD_BUS_SECRET: TEST_BUS_SECRET_ENV,
    SWITCHYARD_LOG_LEVEL: "warn",
    SWITCHYARD_SHARD_COUNT: String(shards.count),
    SWITCHYARD_SHARD_LEASE_TTL_MS: String(shards.leaseTtlMs),
    // Nothing may need a timeout to recover: a retry would show as a second dispatch in the exact counts.
    SWITCHYARD_STEP_TIMEOUT_MS: "120000",
    SWITCHYARD_RECLAIM_IDLE_MS: "1500",
    SWITCHYARD_HEARTBEAT_MS: "500",
    SWITCHYARD_SWEEP_INTERVAL_MS: "200",
    SWITCHYARD_OUTBOX_STALE_MS: "500",
    SWITCHYARD_BLOCK_MS: "200",
    SWITCHYARD_SHUTDOWN_GRACE_MS: "500",
  };
}

export class Fleet {
  readonly processes = new Map<string, ManagedProcess>();

  constructor(private readonly env: Record<string, string>) {}

  coordinator(name: string, extraEnv: Record<string, string> = {}): ManagedProcess {
    return this.spawn(name, ["start", "coordinator", "--consumer", name], { ...this.env, ...extraEnv });
  }

  harness(name: string, role: string, concurrency = 20): ManagedProcess {
    return this.spawn(name, ["start", "harness", "--role", role, "--handler", "examples/handlers/echo.ts", "--concurrency", String(concurrency)], this.env);
  }

  get(name: string): ManagedProcess {
    const proc = this.processes.get(name);
    if (!proc) throw new Error(`no process ${name}`);
    return proc;
  }

  async killAll(): Promise<void> {
    // A stopped process ignores SIGKILL only until it is continued; SIGCONT first costs nothing.
    for (const proc of this.processes.values()) if (proc.child.exitCode === null) proc.child.kill("SIGCONT");
    await Promise.all([...this.processes.values()].map((p) => kill(p)));
  }

  /** The last lines of every process's output, for failure messages. */
  context(lines = 15): string {
    return [...this.processes.values()].map((p) => `--- ${p.name} ---\n${p.output().split("\n").slice(-lines).join("\n")}`).join("\n");
  }

  private spawn(name: string, args: string[], env: Record<string, string>): ManagedProcess {
    const proc = spawnCli(name, args, env);
    this.processes.set(name, proc);
    return proc;
  }
}

/** Live leases by owner: owner → shard → token. */
export function leasesByOwner(leases: readonly LeaseRow[]): Map<string, Map<number, number>> {
  const owners = new Map<string, Map<number, number>>();
  for (const lease of leases) {
    if (!lease.live || lease.owner === null) continue;
    const held = owners.get(lease.owner) ?? new Map<number, number>();
    held.set(lease.shard, lease.token);
    owners.set(lease.owner, held);
  }
  return owners;
}

/** Waits until these coordinators hold exactly the rendezvous split among themselves, every shard live. */
export async function waitForSplit(db: Queryable, members: readonly string[], shardCount: number, context: () => string, stallMs = 240_000): Promise<Map<string, Map<number, number>>> {
  const expected = Object.fromEntries([...members].sort().map((m) => [m, assignShards([...members].sort(), shardCount, m)]));
  const leases = await waitForProgress({
    what: `the shards split among ${members.join(", ")}`,
    progress: () => listLeases(db),
    done: (rows) => {
      const owners = leasesByOwner(rows);
      return members.every((m) => JSON.stringify([...(owners.get(m)?.keys() ?? [])].sort((a, b) => a - b)) === JSON.stringify(expected[m])) && owners.size === members.length;
    },
    key: (rows) => JSON.stringify(rows.map((r) => [r.shard, r.live ? r.owner : null, r.token])),
    // Booting processes through tsx is CPU-bound: a minute or more on a loaded 2-core box.
    stallMs,
    intervalMs: 100,
    describeStuck: (rows) => `leases ${JSON.stringify(rows.map((r) => [r.shard, r.live ? r.owner : null, r.token]))}\n${context()}`,
  });
  return leasesByOwner(leases);
}

/** The tenants among `tenants` whose shard is in `shards`. */
export function tenantsOf(tenants: readonly string[], shards: Iterable<number>, shardCount: number): string[] {
  const set = new Set(shards);
  return tenants.filter((t) => set.has(shardOf(t, shardCount)));
}
