/**
 * `npm run faults -- [options]`: the suite's command line.
 */
import { parseArgs } from "node:util";
export { freePort } from "../test/support/ports.js";

export interface SuiteOptions {
  coordinators: number;
  tasks: number;
  faults: boolean;
  seed: number;
  json: boolean;
  /** 0: any free port. */
  redisPort: number;
  pgPort: number;
  gatewayPort: number;
  /** After the faults, the run ends when nothing has moved for this long; what is unfinished then is stuck. */
  stallSeconds: number;
  /** Hard bound on the whole run. */
  maxMinutes: number;
  /** Each handler execution works for a uniform random time in [min, max] ms: longer work keeps more in flight when a fault lands. */
  workMs: [number, number];
  /** Set dispatch limits before the run (issue 15): steps are held and released through every fault. */
  limits: boolean;
}

export const USAGE = `usage: npm run faults -- [options]

Starts its own Redis and PostgreSQL (from the installed binaries, on ports of their own), the Switchyard processes
as the deploy runs them, and a fan-out/fan-in workload started through the API; injects process and service faults
while it runs; reports completed / failed / stuck tasks, doubled transitions, executions per step attempt,
recovery time per fault, dead letters, processes that exited on their own and audit verify. Exit 0 when the
target is met, 1 when it is missed, 2 when the suite itself could not run.

  --coordinators N     coordinator processes (default 2)
  --tasks N            tasks to start (default 1000)
  --no-faults          run the workload without faults
  --seed N             fault order, victims and spacing (default: random, printed)
  --json               end stdout with the report as one JSON line (progress goes to stderr)
  --redis-port N       the suite's Redis port (default: a free one)
  --pg-port N          the suite's PostgreSQL port (default: a free one)
  --gateway-port N     the gateway's port (default: a free one)
  --stall-seconds N    "stuck" = nothing moved for N s after the faults (default 45)
  --max-minutes N      hard bound on the run (default 20)
  --work-ms MIN-MAX    each handler execution's work time, uniform (default 50-400: some dozen steps in flight)
  --limits             set dispatch limits first (each role's capacity below its harnesses', a tenant cap, a
                       weight), so steps are held back in Postgres and released through every fault
`;

function int(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`--${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`);
  return value;
}

/** Parses the arguments; returns null for --help. Throws with a message naming the bad option. */
export function parseOptions(argv: readonly string[]): SuiteOptions | null {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      coordinators: { type: "string" },
      tasks: { type: "string" },
      "no-faults": { type: "boolean" },
      seed: { type: "string" },
      json: { type: "boolean" },
      "redis-port": { type: "string" },
      "pg-port": { type: "string" },
      "gateway-port": { type: "string" },
      "stall-seconds": { type: "string" },
      "max-minutes": { type: "string" },
      "work-ms": { type: "string" },
      limits: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) return null;
  return {
    coordinators: int("coordinators", values.coordinators, 2, 1),
    tasks: int("tasks", values.tasks, 1000, 1),
    faults: !values["no-faults"],
    seed: int("seed", values.seed, Math.floor(Math.random() * 1_000_000), 0),
    json: values.json === true,
    redisPort: int("redis-port", values["redis-port"], 0, 0),
    pgPort: int("pg-port", values["pg-port"], 0, 0),
    gatewayPort: int("gateway-port", values["gateway-port"], 0, 0),
    stallSeconds: int("stall-seconds", values["stall-seconds"], 45, 5),
    maxMinutes: int("max-minutes", values["max-minutes"], 20, 1),
    workMs: range("work-ms", values["work-ms"], [50, 400]),
    limits: values.limits === true,
  };
}

function range(name: string, raw: string | undefined, fallback: [number, number]): [number, number] {
  if (raw === undefined) return fallback;
  const match = /^(\d+)-(\d+)$/.exec(raw);
  if (!match || Number(match[1]) > Number(match[2])) throw new Error(`--${name} must be MIN-MAX in ms (MIN <= MAX), got ${JSON.stringify(raw)}`);
  return [Number(match[1]), Number(match[2])];
}

/** A port nothing listens on right now (the kernel's pick). */
