/**
 * `cli_help_ms`, `cli_task_start_ms` (and `cli_version_ms`, `node_startup_ms`): how long one `switchyard` command
 * takes, end to end, as a user or a script sees it (issue 12 §1; targets: --help ≤ 400 ms, task start ≤ 600 ms).
 *
 * Each run is a fresh `node --max-semi-space-size=32 bin/switchyard.js …` process — the compiled CLI, as
 * `npm run demo` and the image run it — timed from spawn to exit (wall) and by its own CPU (user + system, all
 * threads, read at exit). Measured in the same run, interleaved with the CLI runs so load on the box hits all
 * alike: `node -e 0` (Node's own start-up: the floor no CLI can go under), and `task start` run from the unbundled
 * tsc output (dist/src/cli/main.js) — what bundling the CLI (scripts/bundle-cli.mjs) saves.
 *
 * Set-up (untimed): a scratch database with a tenant and a one-step workflow; `task start one --tenant … --json`
 * then opens Postgres and Redis, starts a task (first hop governed, envelope published) and prints its TaskView.
 * Afterwards (checked): every timed start created exactly one task.
 *
 * Needs dist/ (`npm run build`; `npm ci` builds it). Figures are medians of N runs (full 15, quick 4) after one
 * warm-up run each; p90 and CPU are beside them in `details`.
 */
import { createPostgresStores } from "../src/store/postgres-stores.js";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { ErrorCode, SwitchyardError } from "../src/errors.js";
import { submitWorkflow } from "../src/store/workflow-store.js";
import { createTenant } from "../src/tenancy/tenants.js";
import { parseWorkflowDefinition } from "../src/workflow/definition.js";
import { summarize, type Measurement, type Scenario } from "./support.js";

const stores = createPostgresStores();

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const BIN = fileURLToPath(new URL("../bin/switchyard.js", import.meta.url));
const COMPILED_MAIN = fileURLToPath(new URL("../dist/bundle/cli.js", import.meta.url));
const UNBUNDLED_MAIN = fileURLToPath(new URL("../dist/src/cli/main.js", import.meta.url));
const ORG = "bench-cli";
const RUNS = { full: 15, quick: 4 };
/** What `npm run demo` and the image give every process (package.json scripts, deploy/Dockerfile NODE_OPTIONS). */
const NODE_FLAGS = ["--max-semi-space-size=32"];
/**
 * Preloaded into every measured process, the baseline included: prints the process's CPU (µs, user + system) to
 * fd 3 as it exits. A child's CPU cannot be read from outside once it has gone.
 */
const CPU_PROBE = `data:text/javascript,${encodeURIComponent(
  'import { writeSync } from "node:fs"; process.on("exit", () => { const u = process.cpuUsage(); try { writeSync(3, String(u.user + u.system)); } catch {} });',
)}`;

interface CommandRun {
  wallMs: number;
  cpuMs: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

function runNode(args: readonly string[], env: Record<string, string>, signal: AbortSignal): Promise<CommandRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [...NODE_FLAGS, "--import", CPU_PROBE, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      signal,
    });
    let stdout = "";
    let stderr = "";
    let cpu = "";
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    (child.stdio[3] as NodeJS.ReadableStream).on("data", (chunk: Buffer) => (cpu += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ wallMs: performance.now() - started, cpuMs: Number(cpu) / 1000, code, stdout, stderr }));
  });
}

interface Variant {
  key: string;
  label: string;
  args: readonly string[];
  /** Throws when the run did not do what it should (a fast failure is not a fast command). */
  check(run: CommandRun): void;
}

function expectExit(run: CommandRun, label: string): void {
  if (run.code !== 0) throw new SwitchyardError(ErrorCode.Internal, `${label} exited ${run.code}: ${run.stderr.trim().slice(0, 500)}`);
}

export const cliStartupScenario: Scenario = {
  name: "cli-startup",
  description: "wall and CPU of one compiled `switchyard` process: --help, --version, task start --json (vs node -e 0, and unbundled)",
  budgetMs: { full: 180_000, quick: 60_000 },
  async run(ctx) {
    if (!existsSync(COMPILED_MAIN)) {
      throw new SwitchyardError(ErrorCode.Config, "dist/bundle/cli.js is missing: run `npm run build` (npm ci runs it) before the cli-startup scenario");
    }
    const runs = RUNS[ctx.quick ? "quick" : "full"];
    const db = await ctx.createScratchDatabase();
    await createTenant(stores.tenants, db.pool, { orgId: ORG, name: ORG });
    await submitWorkflow(db.pool, ORG, parseWorkflowDefinition('name: one\nsteps:\n  - { id: a, to: "role:bench", timeout: 10m }\n'));
    const env = { DATABASE_URL: db.url, REDIS_URL: ctx.redisUrl, SWITCHYARD_KEY_PREFIX: ctx.keyPrefix, SWITCHYARD_LOG_LEVEL: "warn" };

    let started = 0;
    const variants: Variant[] = [
      { key: "node_startup_ms", label: "node -e 0", args: ["-e", "0"], check: (r) => expectExit(r, "node -e 0") },
      {
        key: "cli_help_ms",
        label: "switchyard --help",
        args: [BIN, "--help"],
        check: (r) => {
          expectExit(r, "--help");
          if (!/^ {2}task\b/m.test(r.stdout)) throw new SwitchyardError(ErrorCode.Internal, "--help did not list the task command");
        },
      },
      {
        key: "cli_version_ms",
        label: "switchyard --version",
        args: [BIN, "--version"],
        check: (r) => {
          expectExit(r, "--version");
          if (!/^\d+\.\d+\.\d+/.test(r.stdout)) throw new SwitchyardError(ErrorCode.Internal, `--version printed ${JSON.stringify(r.stdout)}`);
        },
      },
      {
        key: "cli_task_start_ms",
        label: "switchyard task start one --json",
        args: [BIN, "task", "start", "one", "--tenant", ORG, "--json", "--input", '{"from":"bench"}'],
        check: (r) => {
          expectExit(r, "task start");
          const view = JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "null") as { id?: string } | null;
          if (!view?.id) throw new SwitchyardError(ErrorCode.Internal, `task start printed no TaskView: ${r.stdout.slice(0, 300)}`);
          started += 1;
        },
      },
      {
        // The same command from the tsc output, unbundled: what the bundle saves, measured in the same rounds.
        key: "cli_task_start_unbundled_ms",
        label: "dist/src/cli/main.js task start one --json (unbundled)",
        args: [UNBUNDLED_MAIN, "task", "start", "one", "--tenant", ORG, "--json", "--input", '{"from":"bench"}'],
        check: (r) => {
          expectExit(r, "unbundled task start");
          started += 1;
        },
      },
    ];

    const samples = new Map(variants.map((v) => [v.key, { wall: [] as number[], cpu: [] as number[] }]));
    await ctx.phase("warm-up (one run of each)", async () => {
      for (const variant of variants) variant.check(await runNode(variant.args, env, ctx.signal));
    });
    await ctx.phase(`${runs} rounds, interleaved`, async () => {
      for (let round = 0; round < runs && !ctx.signal.aborted; round++) {
        for (const variant of variants) {
          const run = await runNode(variant.args, env, ctx.signal);
          variant.check(run);
          samples.get(variant.key)!.wall.push(run.wallMs);
          samples.get(variant.key)!.cpu.push(run.cpuMs);
        }
      }
    });

    const { rows } = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM tasks WHERE org_id = $1", [ORG]);
    if (rows[0]?.n !== started) throw new SwitchyardError(ErrorCode.Internal, `${started} task starts answered but ${rows[0]?.n} tasks exist`);

    const measurements: Measurement[] = [];
    for (const variant of variants) {
      const { wall, cpu } = samples.get(variant.key)!;
      if (wall.length === 0) continue;
      const w = summarize(wall);
      const c = summarize(cpu);
      ctx.log(`${variant.label}: wall p50 ${w.p50.toFixed(0)} ms (p90 ${w.p90.toFixed(0)}), cpu p50 ${c.p50.toFixed(0)} ms, ${w.count} runs`);
      measurements.push({
        name: variant.key,
        value: Math.round(w.p50),
        unit: "ms",
        extra: { runs: w.count, wall_p90_ms: Math.round(w.p90), cpu_p50_ms: Math.round(c.p50), cpu_p90_ms: Math.round(c.p90), command: variant.label },
      });
    }
    return measurements;
  },
};
