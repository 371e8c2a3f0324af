/**
 * What every benchmark scenario shares: argument parsing, the scenario contract, a per-scenario context (unique
 * Redis key prefix, scratch databases, phases, a time budget), timing and percentile helpers, and the runner.
 * The report (table, ratios against the baselines, targets, JSON line) is at the bottom.
 *
 * The bench is a script, not a library: connection URLs come from `loadConfig()` (src/config/index.ts still being the
 * only reader of REDIS_URL / DATABASE_URL), and progress goes to stderr so stdout holds only the report.
 */
import { parseBusSecrets } from "../src/bus/auth/bus-keys.js";
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { Redis } from "ioredis";
import { defaultConfig, type Config } from "../src/config/index.js";
import { ErrorCode, SwitchyardError } from "../src/errors.js";
import { createPool, type Pool } from "../src/store/db.js";
import { migrate } from "../src/store/migrate.js";
import { formatMs } from "./report.js";

// ---------------------------------------------------------------------------------------------------------------
// Arguments

export interface BenchOptions {
  /** End stdout with one JSON line holding every figure. */
  json: boolean;
  /** A short smoke run: smaller inputs, shorter budgets. Figures are indicative only. */
  quick: boolean;
  /** Scenario names to run; undefined runs all. */
  only?: string[];
  /** How long the soak scenario runs (minutes). @defaultValue 20 */
  soakMinutes?: number;
  help: boolean;
}

export const USAGE = `usage: npm run bench -- [--quick] [--json] [--only NAME[,NAME...]] [--soak-minutes N]

  --quick        short smoke run (small inputs; figures are indicative only)
  --json         end the output with one line holding a JSON object of every figure
  --only NAMES   run only these scenarios (comma-separated; repeatable); "soak" runs only when named
  --soak-minutes N  how long the soak runs (default 20)
  --help         this text`;

export function parseArgs(argv: readonly string[]): BenchOptions {
  const options: BenchOptions = { json: false, quick: false, help: false };
  const addOnly = (value: string | undefined): void => {
    const names = (value ?? "").split(",").map((s) => s.trim()).filter(Boolean);
    if (names.length === 0) throw new SwitchyardError(ErrorCode.InvalidArgument, "--only needs a scenario name");
    options.only = [...(options.only ?? []), ...names];
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--json") options.json = true;
    else if (arg === "--quick") options.quick = true;
    else if (arg === "--help" || arg === "-h") options.help = true;
    else if (arg === "--only") addOnly(argv[++i]);
    else if (arg.startsWith("--only=")) addOnly(arg.slice("--only=".length));
    else if (arg === "--soak-minutes" || arg.startsWith("--soak-minutes=")) {
      const value = Number(arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : argv[++i]);
      if (!(value > 0)) throw new SwitchyardError(ErrorCode.InvalidArgument, "--soak-minutes needs a positive number");
      options.soakMinutes = value;
    }
    else throw new SwitchyardError(ErrorCode.InvalidArgument, `unknown argument ${JSON.stringify(arg)}`, { details: { arg } });
  }
  return options;
}

/** The scenarios named by `--only`, in registry order; an unknown name is an error that lists the known ones. */
export function selectScenarios(all: readonly Scenario[], only: readonly string[] | undefined): Scenario[] {
  // Opt-in scenarios (the 20-minute soak) run only when named.
  if (!only) return all.filter((s) => !s.optIn);
  const known = new Set(all.map((s) => s.name));
  const unknown = only.filter((n) => !known.has(n));
  if (unknown.length > 0) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `unknown scenario ${unknown.join(", ")}; known: ${[...known].join(", ")}`);
  }
  return all.filter((s) => only.includes(s.name));
}

// ---------------------------------------------------------------------------------------------------------------
// The scenario contract

/** One figure. `name` is also its key in the JSON line (e.g. `raw_relay_hops_per_s`). */
export interface Measurement {
  name: string;
  value: number;
  /** Throughput units end in `/s` (they get ratios against the baselines); latencies are `ms`. */
  unit: string;
  /** Context worth keeping beside the figure: input sizes, batch, concurrency, partial-run flags. */
  extra?: Record<string, unknown>;
}

export interface ScratchDatabase {
  name: string;
  url: string;
  /** A pool on the scratch database (max 20), ended by `drop()`. */
  pool: Pool;
  /** Ends the pool and drops the database. Idempotent; also run automatically after the scenario. */
  drop(): Promise<void>;
}

export interface ScenarioContext {
  redisUrl: string;
  /** Base Postgres URL; scratch databases are created beside the database it names. */
  databaseUrl: string;
  /** Unique per run and scenario (`sybench:<run>:<scenario>:`); every key under it is deleted afterwards. */
  keyPrefix: string;
  quick: boolean;
  /** `--soak-minutes`, when given. */
  soakMinutes?: number;
  /** Aborts when the scenario's time budget is spent or the run is interrupted; stop and report what you have. */
  signal: AbortSignal;
  /** A fresh `sy_bench_<random>` database with every migration applied; dropped after the scenario. */
  createScratchDatabase(): Promise<ScratchDatabase>;
  /** Times `fn` as a named phase: logged at once and listed in the report under "where the time goes". */
  phase<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** Registers a cleanup run after the scenario (last registered runs first), even when it fails. */
  defer(cleanup: () => unknown): void;
  log(message: string): void;
}

export interface Scenario {
  /** Short kebab-case name used by `--only`. */
  name: string;
  description: string;
  /** Time budget in ms for a full / quick run (defaults 60 s / 20 s); `ctx.signal` aborts when it is spent. */
  budgetMs?: { full: number; quick: number } | ((options: { quick: boolean; soakMinutes?: number }) => number);
  /** Runs only when named by `--only` (too long for the default run). */
  optIn?: boolean;
  run(ctx: ScenarioContext): Promise<Measurement[]>;
}

// ---------------------------------------------------------------------------------------------------------------
// Timing and statistics

export interface Stopwatch {
  /** Milliseconds since start. */
  elapsedMs(): number;
  /** Milliseconds since the previous lap (or start), and starts a new lap. */
  lapMs(): number;
}

export function startStopwatch(): Stopwatch {
  const start = performance.now();
  let lap = start;
  return {
    elapsedMs: () => performance.now() - start,
    lapMs: () => {
      const now = performance.now();
      const ms = now - lap;
      lap = now;
      return ms;
    },
  };
}

export function perSecond(count: number, ms: number): number {
  return ms > 0 ? (count * 1000) / ms : 0;
}

/** Nearest-rank percentile (`p` in 0..100) of unsorted samples; NaN when there are none. */
export function percentile(samples: readonly number[], p: number): number {
  return percentileOfSorted([...samples].sort((a, b) => a - b), p);
}

function percentileOfSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((Math.min(100, Math.max(0, p)) / 100) * sorted.length);
  return sorted[Math.max(0, rank - 1)]!;
}

export interface Summary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    count: sorted.length,
    min: sorted[0] ?? Number.NaN,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    p50: percentileOfSorted(sorted, 50),
    p90: percentileOfSorted(sorted, 90),
    p99: percentileOfSorted(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
  };
}

/**
 * Calls `fire(i, intendedAtMs)` at a fixed offered rate (open loop) for `durationMs` or until `signal` aborts;
 * resolves with the number fired. Late ticks fire every overdue call at once, so a slow system under test does
 * not lower the offered load; measure latency from `intendedAtMs` (a `performance.now()` time) to avoid
 * coordinated omission.
 */
export async function paceAt(
  options: { ratePerS: number; durationMs: number; signal?: AbortSignal },
  fire: (index: number, intendedAtMs: number) => void,
): Promise<number> {
  const intervalMs = 1000 / options.ratePerS;
  const start = performance.now();
  const total = Math.floor((options.durationMs / 1000) * options.ratePerS);
  let fired = 0;
  while (fired < total && !options.signal?.aborted) {
    const now = performance.now();
    while (fired < total && start + fired * intervalMs <= now) {
      fire(fired, start + fired * intervalMs);
      fired++;
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return fired;
}

// ---------------------------------------------------------------------------------------------------------------
// Running scenarios

export interface Phase {
  name: string;
  ms: number;
}

export interface ScenarioResult {
  scenario: Scenario;
  measurements: Measurement[];
  phases: Phase[];
  elapsedMs: number;
  error?: Error;
}

export interface RunOptions {
  redisUrl: string;
  databaseUrl: string;
  quick: boolean;
  soakMinutes?: number;
  /** Interrupts the whole run (e.g. on SIGINT). */
  signal?: AbortSignal;
  log?: (line: string) => void;
}

const DEFAULT_BUDGET = { full: 60_000, quick: 20_000 };
// A scenario that ignores its aborted signal is abandoned this long after its budget so the run still ends.
const ABANDON_GRACE_MS = 15_000;

export function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Runs scenarios one after another (never concurrently: they share Redis and Postgres). */
export async function runScenarios(scenarios: readonly Scenario[], options: RunOptions): Promise<ScenarioResult[]> {
  const runId = randomBytes(4).toString("hex");
  const results: ScenarioResult[] = [];
  for (const scenario of scenarios) {
    if (options.signal?.aborted) break;
    results.push(await runOne(scenario, runId, options));
  }
  return results;
}

async function runOne(scenario: Scenario, runId: string, options: RunOptions): Promise<ScenarioResult> {
  const write = options.log ?? log;
  const budgetMs = scenario.budgetMs ?? DEFAULT_BUDGET;
  const budget = typeof budgetMs === "function" ? budgetMs(options) : budgetMs[options.quick ? "quick" : "full"];
  const budgetSignal = AbortSignal.timeout(budget);
  const signal = options.signal ? AbortSignal.any([options.signal, budgetSignal]) : budgetSignal;
  const keyPrefix = `sybench:${runId}:${scenario.name}:`;
  const phases: Phase[] = [];
  const cleanups: Array<() => unknown> = [];
  const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const watch = startStopwatch();
    try {
      return await fn();
    } finally {
      const ms = watch.elapsedMs();
      phases.push({ name, ms });
      write(`  ${scenario.name} › ${name}: ${formatMs(ms)}`);
    }
  };
  const ctx: ScenarioContext = {
    redisUrl: options.redisUrl,
    databaseUrl: options.databaseUrl,
    keyPrefix,
    quick: options.quick,
    ...(options.soakMinutes !== undefined ? { soakMinutes: options.soakMinutes } : {}),
    signal,
    createScratchDatabase: async () => {
      const db = await createScratchDatabase(options.databaseUrl);
      cleanups.push(() => db.drop());
      return db;
    },
    phase: timed,
    defer: (cleanup) => void cleanups.push(cleanup),
    log: (message) => write(`  ${scenario.name} › ${message}`),
  };

  write(`▶ ${scenario.name}: ${scenario.description} (budget ${formatMs(budget)})`);
  const watch = startStopwatch();
  let measurements: Measurement[] = [];
  let error: Error | undefined;
  let abandonTimer: NodeJS.Timeout | undefined;
  try {
    const abandoned = new Promise<never>((_, reject) => {
      abandonTimer = setTimeout(
        () => reject(new SwitchyardError(ErrorCode.Timeout, `scenario ${scenario.name} ignored its budget; abandoned`)),
        budget + ABANDON_GRACE_MS,
      );
    });
    measurements = await Promise.race([scenario.run(ctx), abandoned]);
    if (signal.aborted) write(`  ${scenario.name} › budget spent or interrupted: figures cover a partial run`);
  } catch (cause) {
    error = cause instanceof Error ? cause : new Error(String(cause));
    write(`  ${scenario.name} ✘ ${error.message}`);
  } finally {
    clearTimeout(abandonTimer);
  }
  await timed("cleanup", async () => {
    for (const cleanup of cleanups.reverse()) {
      await Promise.resolve()
        .then(cleanup)
        .catch((e: unknown) => write(`  ${scenario.name} › cleanup failed: ${(e as Error).message}`));
    }
    await deleteKeysByPrefix(options.redisUrl, keyPrefix).catch((e: unknown) =>
      write(`  ${scenario.name} › deleting ${keyPrefix}* failed: ${(e as Error).message}`),
    );
  });
  const result: ScenarioResult = { scenario, measurements, phases, elapsedMs: watch.elapsedMs() };
  if (error) result.error = error;
  return result;
}

async function deleteKeysByPrefix(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 3, retryStrategy: () => null });
  redis.on("error", () => {});
  await redis.connect();
  try {
    await unlinkByPrefix(redis, prefix);
  } finally {
    redis.disconnect();
  }
}

/** Unlinks every key under `prefix` on this connection. */
export async function unlinkByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== "0");
}

export function withDatabase(baseUrl: string, name: string): string {
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Creates and migrates `sy_bench_<random>` beside the database `baseUrl` names. */
export async function createScratchDatabase(baseUrl: string): Promise<ScratchDatabase> {
  const name = `sy_bench_${randomBytes(6).toString("hex")}`;
  const url = withDatabase(baseUrl, name);
  let dropped = false;
  const drop = async (): Promise<void> => {
    if (dropped) return;
    dropped = true;
    await pool.end().catch(() => {});
    const admin = new pg.Client({ connectionString: withDatabase(baseUrl, "postgres") });
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    } finally {
      await admin.end();
    }
  };
  const pool = createPool({ connectionString: url, max: 20, applicationName: "switchyard-bench" });
  try {
    await migrate({ connectionString: url, createDatabase: true });
  } catch (error) {
    await drop().catch(() => {});
    throw error;
  }
  return { name, url, pool, drop };
}

// ---------------------------------------------------------------------------------------------------------------
// Report

/** Keys the JSON line always carries (null when not measured). */

/** The bus secret every bench process shares (coordinator and harness children included; README "Bus authentication"). */
export const BENCH_BUS_SECRETS = parseBusSecrets("bench:switchyard-bench-bus-secret-0123456789abcdef");

/**
 * The config of a scenario's own runtime: its scratch database and key prefix, the bench bus secret, no logs, and
 * the bus and coordinator switched on for every tenant, as an operator does before traffic (dormant by default).
 */
export function scenarioConfig(ctx: Pick<ScenarioContext, "redisUrl" | "keyPrefix">, databaseUrl: string, patch: (config: Config) => Partial<Config> = () => ({})): Config {
  const config: Config = {
    ...defaultConfig,
    redisUrl: ctx.redisUrl,
    databaseUrl,
    logLevel: "silent",
    bus: { ...defaultConfig.bus, keyPrefix: ctx.keyPrefix },
    flags: { ...defaultConfig.flags, busEnabled: true, coordinatorEnabled: true, coordinatorTenants: "*" },
    busAuth: { secrets: BENCH_BUS_SECRETS, publisherKeys: [] },
  };
  return { ...config, ...patch(config) };
}
