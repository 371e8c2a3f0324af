/**
 * The faults and when they land: kill -9 of each process kind (each restarted at once), a Redis restart that
 * loses every key, and PostgreSQL restarts (`-m fast`, `-m immediate`, kill -9 of the postmaster then start).
 * They come one at a time in a seeded order; each waits for the system to move again after the previous one
 * (recovery time = fault → the first step completed after the fault's action finished) plus a seeded pause,
 * so the system is under load — tasks in flight — when each lands.
 */
import type { Fleet } from "./fleet.js";
import type { Monitor } from "./monitor.js";
import { between, shuffle, sleep, type Random } from "./random.js";
import type { Services } from "./services.js";

export type FaultKind = "kill -9 coordinator" | "kill -9 harness" | "kill -9 gateway" | "redis restart (data lost)" | "postgres restart -m fast" | "postgres restart -m immediate" | "kill -9 postmaster";

export interface PlannedFault {
  kind: FaultKind;
  /** The process killed, for process faults. */
  target?: string;
}

export interface FaultResult extends PlannedFault {
  /** ms since the run started. */
  atMs: number;
  /** Tasks started and not finished when the fault landed. */
  inFlight: number;
  /** How long the action took: kill and respawn, or the service's restart until it answers again. */
  actionMs: number;
  /** Fault → first step completed after the action; null when nothing completed within the wait. */
  recoveryMs: number | null;
  /** Every task had finished already, so there was no throughput to resume. */
  nothingLeft: boolean;
  error?: string;
}

/** Nine faults (ten with three coordinators): every coordinator killed once, two different harnesses, the gateway, Redis and three Postgres restarts. */
export function planFaults(random: Random, fleet: Fleet): PlannedFault[] {
  const coordinators = fleet.names("coordinator");
  const harnesses = fleet.names("harness");
  const plan: PlannedFault[] = [
    ...shuffle(random, coordinators).slice(0, Math.max(2, coordinators.length)).map((target) => ({ kind: "kill -9 coordinator" as const, target })),
    ...shuffle(random, harnesses).slice(0, 2).map((target) => ({ kind: "kill -9 harness" as const, target })),
    { kind: "kill -9 gateway", target: "gateway" },
    { kind: "redis restart (data lost)" },
    { kind: "postgres restart -m fast" },
    { kind: "postgres restart -m immediate" },
    { kind: "kill -9 postmaster" },
  ];
  return shuffle(random, plan);
}

/**
 * What a fault's action and recovery usually take (s), to pace the starts so they outlast the last fault. A killed
 * coordinator's shards move once their leases expire (SWITCHYARD_SHARD_LEASE_TTL_MS, 5 s) plus a round; a
 * PostgreSQL restart takes 5–7 s, more on a loaded box.
 */
export function expectedFaultSeconds(kind: FaultKind): number {
  switch (kind) {
    case "kill -9 coordinator":
      return 8;
    case "postgres restart -m fast":
    case "postgres restart -m immediate":
    case "kill -9 postmaster":
      return 10;
    default:
      return 3;
  }
}

export interface InjectorOptions {
  plan: readonly PlannedFault[];
  fleet: Fleet;
  services: Services;
  monitor: Monitor;
  random: Random;
  runStartedAt: number;
  /** Pause before each fault, drawn from [min, max] ms. */
  spacingMs: readonly [number, number];
  /** Longest wait for throughput to resume after a fault. */
  recoveryWaitMs: number;
  signal: AbortSignal;
  log: (line: string) => void;
}

async function act(fault: PlannedFault, fleet: Fleet, services: Services, monitor: Monitor): Promise<void> {
  switch (fault.kind) {
    case "kill -9 coordinator":
    case "kill -9 harness":
    case "kill -9 gateway":
      await fleet.killAndRestart(fault.target!);
      return;
    case "redis restart (data lost)":
      // Collect dead letters first: the restart erases their streams.
      await monitor.collectDeadLetters().catch(() => {});
      await services.restartRedisWithDataLoss();
      return;
    case "postgres restart -m fast":
      await services.restartPostgres("fast");
      return;
    case "postgres restart -m immediate":
      await services.restartPostgres("immediate");
      return;
    case "kill -9 postmaster":
      await services.killPostgresAndStart();
      return;
  }
}

/** Longest wait for a task to be in flight before a fault lands. */
const IN_FLIGHT_WAIT_MS = 30_000;

export async function injectFaults(options: InjectorOptions): Promise<FaultResult[]> {
  const { fleet, services, monitor, random, signal, log } = options;
  const results: FaultResult[] = [];
  for (const [n, fault] of options.plan.entries()) {
    await sleep(between(random, ...options.spacingMs), signal);
    // A fault must land on work in flight: after a gateway restart, say, the tasks in flight can all finish before
    // the next start is answered. Wait for new work (bounded: the starts may be over).
    for (const until = Date.now() + IN_FLIGHT_WAIT_MS; !signal.aborted && Date.now() < until; ) {
      const now = monitor.latest;
      if (now.tasks - now.finishedTasks > 0) break;
      await sleep(100);
    }
    if (signal.aborted) break;
    const before = monitor.latest;
    const t0 = Date.now();
    const result: FaultResult = { ...fault, atMs: t0 - options.runStartedAt, inFlight: before.tasks - before.finishedTasks, actionMs: 0, recoveryMs: null, nothingLeft: false };
    log(`fault ${n + 1}/${options.plan.length}: ${fault.kind}${fault.target ? ` (${fault.target})` : ""} with ${result.inFlight} tasks in flight`);
    try {
      await act(fault, fleet, services, monitor);
    } catch (error) {
      result.error = (error as Error).message;
      log(`  could not inject it: ${result.error}`);
    }
    const t1 = Date.now();
    result.actionMs = t1 - t0;
    const baseline = await monitor.sample();
    const deadline = t1 + options.recoveryWaitMs;
    for (;;) {
      const resumed = monitor.firstProgressAfter(t1, baseline.completedSteps);
      if (resumed) {
        result.recoveryMs = resumed.at - t0;
        break;
      }
      const latest = monitor.latest;
      if (latest.ok && latest.tasks > 0 && latest.finishedTasks === latest.tasks && before.tasks === latest.tasks) {
        result.nothingLeft = true;
        break;
      }
      if (Date.now() > deadline || signal.aborted) break;
      await sleep(100);
    }
    log(`  action ${(result.actionMs / 1000).toFixed(1)} s, ${result.recoveryMs !== null ? `throughput resumed after ${(result.recoveryMs / 1000).toFixed(1)} s` : result.nothingLeft ? "no work left" : `NO progress within ${options.recoveryWaitMs / 1000} s`}`);
    results.push(result);
  }
  return results;
}
