/**
 * `npm run bench` — runs every registered scenario once, in order, against the same local Redis and Postgres,
 * then prints each figure with its ratio against the two baselines (raw relay, BullMQ) and, with `--json`, ends
 * stdout with one JSON line. Never part of `npm test`.
 */
import os from "node:os";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { Redis } from "ioredis";
import { loadConfig } from "../src/config/index.js";
import { bullmqScenario } from "./bullmq.js";
import { cliStartupScenario } from "./cli-startup.js";
import { rawRelayScenario } from "./raw-relay.js";
import { endToEndScenario } from "./scenarios/end-to-end.js";
import { governedHopsScenario } from "./scenarios/governed-hops.js";
import { latencyScenario } from "./scenarios/latency.js";
import { a2aCallbacksScenario } from "./scenarios/a2a-callbacks.js";
import { a2aEgressScenario } from "./scenarios/a2a-egress.js";
import { ingestScenario } from "./scenarios/ingest.js";
import { replyEgressScenario } from "./scenarios/reply-egress.js";
import { startsScenario } from "./scenarios/starts.js";
import { scaleOutScenario } from "./scenarios/scale-out.js";
import { soakScenario } from "./scenarios/soak.js";
import { tracingCostScenario } from "./scenarios/tracing-cost.js";
import { fairnessScenario } from "./scenarios/fairness.js";
import { formatJsonLine, formatReport } from "./report.js";
import {
  USAGE,
  log,
  parseArgs,
  runScenarios,
  selectScenarios,
  withDatabase,
  type Scenario,
} from "./support.js";

/**
 * Every scenario, in the order they run. Baselines go first so the Switchyard figures are compared with numbers
 * taken minutes earlier on the same servers. The Switchyard scenarios (scenarios/) emit:
 *   (a) end-to-end workflow steps/s              → `steps_per_s` (unit "steps/s")      end-to-end
 *   (b) coordinator governed hops/s              → `hops_per_s` (unit "hops/s")        governed-hops
 *   (e) step latency at 1,000 steps/s offered    → `step_p50_ms`, `step_p99_ms` (ms)   latency
 *   A2A push callbacks/s (verify → resume)      → `callbacks_per_s` (unit "callbacks/s") a2a-callbacks
 *   A2A adapter's added latency per dispatch    → `egress_added_ms` (ms)               a2a-egress
 *   verified ingest deliveries/s to task started → `ingest_per_s` (unit "deliveries/s")  ingest
 *   reply sender's added latency per post      → `reply_added_ms` (ms)                reply-egress
 *   (f) task starts through the gateway          → `starts_per_s` (unit "starts/s"),   starts
 *                                                  `start_p50_ms`, `start_p99_ms` (ms)
 *   (g) 2 coordinator processes vs 1, takeover → `hops_per_s_2_coordinators`, `hops_per_s_1_coordinator` (hops/s),
 *                                                `shard_takeover_ms`, `lease_ttl_ms` (ms)               scale-out
 *   tenant fairness (issue 15)               → `fair_beta_p99_ratio` (x),               fairness
 *                                                  `fair_alpha_drain_overhead_pct` (%)
 *                                                  `fair_limits_drain_cost_pct` (%)
 *   (h) soak, opt-in (`--only soak`)           → `soak_rss_growth_pct` (%)              soak
 *   one compiled `switchyard` process           → `cli_help_ms`, `cli_task_start_ms`,   cli-startup
 *                                                  `cli_version_ms`, `node_startup_ms`,
 *                                                  `cli_task_start_unbundled_ms` (ms)
 */
export const scenarios: Scenario[] = [rawRelayScenario, bullmqScenario, endToEndScenario, governedHopsScenario, latencyScenario, a2aCallbacksScenario, a2aEgressScenario, ingestScenario, replyEgressScenario, startsScenario, scaleOutScenario, cliStartupScenario, soakScenario, tracingCostScenario, fairnessScenario];

/**
 * Server versions and host facts printed at the top of the report, so figures can be compared fairly; also the
 * preflight: a server that does not answer is named in `unreachable` and the run stops before any scenario.
 */
async function describeEnvironment(redisUrl: string, databaseUrl: string): Promise<{ lines: string[]; unreachable: string[] }> {
  const unreachable: string[] = [];
  const cpus = os.cpus();
  const load = os.loadavg()[0]!;
  const lines = [`node ${process.version} · ${cpus.length} × ${cpus[0]?.model ?? "cpu"} · ${os.platform()} · load ${load.toFixed(2)}`];
  // Other processes on the box (a parallel test run) move these figures by tens of percent.
  if (load > cpus.length * 0.5) lines.push(`WARNING: load average ${load.toFixed(2)} on ${cpus.length} CPUs before the run; figures will be noisy`);
  // One attempt, no reconnect loop: an unreachable server should end the run with a message, not hang it.
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on("error", () => {});
  try {
    await redis.connect();
    const info = `${await redis.info("server")}${await redis.info("persistence")}`;
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? "?";
    lines.push(`redis ${version} (aof ${/aof_enabled:1/.test(info) ? "on" : "off"}) at ${new URL(redisUrl).host}`);
  } catch (error) {
    unreachable.push(`redis at ${new URL(redisUrl).host}: ${(error as Error).message}`);
  } finally {
    redis.disconnect();
  }
  const client = new pg.Client({ connectionString: withDatabase(databaseUrl, "postgres") });
  try {
    await client.connect();
    const { rows } = await client.query<{ v: string; sync: string }>(
      "SELECT current_setting('server_version') AS v, current_setting('synchronous_commit') AS sync",
    );
    lines.push(`postgres ${rows[0]?.v} (synchronous_commit ${rows[0]?.sync}) at ${new URL(databaseUrl).host}`);
  } catch (error) {
    unreachable.push(`postgres at ${new URL(databaseUrl).host}: ${(error as Error).message}`);
  } finally {
    await client.end().catch(() => {});
  }
  return { lines, unreachable };
}

async function main(argv: readonly string[]): Promise<number> {
  let options;
  let selected: Scenario[];
  try {
    options = parseArgs(argv);
    selected = selectScenarios(scenarios, options.only);
  } catch (error) {
    log(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n\nscenarios:\n${scenarios.map((s) => `  ${s.name.padEnd(14)} ${s.description}`).join("\n")}\n`);
    return 0;
  }
  const config = loadConfig();

  // First Ctrl-C stops the current scenario and still cleans up and reports; a second one exits at once.
  const interrupt = new AbortController();
  process.on("SIGINT", () => {
    if (interrupt.signal.aborted) process.exit(130);
    log("interrupted: cleaning up (Ctrl-C again to exit now)");
    interrupt.abort();
  });

  const environment = await describeEnvironment(config.redisUrl, config.databaseUrl);
  if (environment.unreachable.length > 0) {
    log(`bench needs Redis and Postgres (REDIS_URL / DATABASE_URL); unreachable:\n  ${environment.unreachable.join("\n  ")}`);
    return 1;
  }
  const results = await runScenarios(selected, {
    redisUrl: config.redisUrl,
    databaseUrl: config.databaseUrl,
    quick: options.quick,
    ...(options.soakMinutes !== undefined ? { soakMinutes: options.soakMinutes } : {}),
    signal: interrupt.signal,
  });
  process.stdout.write(`\n${formatReport(results, environment.lines, { quick: options.quick })}\n`);
  if (options.json) process.stdout.write(`${formatJsonLine(results, { quick: options.quick })}\n`);
  return results.some((r) => r.error) || interrupt.signal.aborted ? 1 : 0;
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
      // A client library that leaves a handle open must not keep a finished bench alive.
      setTimeout(() => {
        log("bench: open handles after the run; exiting");
        process.exit(code);
      }, 5_000).unref();
    },
    (error: unknown) => {
      log(`bench failed: ${(error as Error).stack ?? String(error)}`);
      process.exit(1);
    },
  );
}
