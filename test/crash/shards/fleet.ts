/**
 * Named coordinator processes (`start coordinator --consumer NAME`) and echo harnesses for the shard crash tests,
 * and waits on the shard split as `shard_leases` shows it.
 */
import { listLeases, type LeaseRow } from "../../../src/coordinator/shard-leases.js";
import { assignShards } from "../../../src/coordinator/shard-ownership.js";
import { shardOf } from "../../../src/coordinator/shards.js";
import type { Queryable } from "../../../src/store/db.js";
import { kill, spawnCli, type ManagedProcess } from "../../support/processes.js";
import { waitForProgress } from "../../support/wait.js";

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
