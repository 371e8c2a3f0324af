/**
 * What the validated configuration costs a process at start-up (README, "Configuration"): importing zod, in a
 * fresh `node` each time (what every CLI command pays once), and one `loadConfig` call on an empty and on a busy
 * environment. CPU only: `npx tsx bench/config-load.ts [runs]`. Not part of `npm run bench`.
 */
import { execFileSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { loadConfig } from "../src/config/index.js";

const runs = Number(process.argv[2] ?? 8);

/** CPU (user + system) and wall ms of `code` in a fresh node, as the child measures them itself. */
function child(code: string): { cpuMs: number; wallMs: number } {
  const script = `const c = process.cpuUsage(); const t = performance.now(); ${code}; const u = process.cpuUsage(c);
    console.log(JSON.stringify({ cpuMs: (u.user + u.system) / 1000, wallMs: performance.now() - t }));`;
  const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: new URL("..", import.meta.url), encoding: "utf8" });
  return JSON.parse(out) as { cpuMs: number; wallMs: number };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function importCost(specifier: string): { cpuMs: number; wallMs: number } {
  const samples = Array.from({ length: runs }, () => child(`await import(${JSON.stringify(specifier)})`));
  return { cpuMs: median(samples.map((s) => s.cpuMs)), wallMs: median(samples.map((s) => s.wallMs)) };
}

/** Microseconds per call, median of 5 rounds. */
function perCall(rounds: number, fn: () => unknown): number {
  const results: number[] = [];
  for (let r = 0; r < 5; r++) {
    const started = performance.now();
    for (let i = 0; i < rounds; i++) fn();
    results.push(((performance.now() - started) * 1000) / rounds);
  }
  return median(results);
}

const busy = {
  REDIS_URL: "redis://redis:6379",
  DATABASE_URL: "postgres://switchyard:pw@postgres:5432/switchyard",
  SWITCHYARD_LOG_LEVEL: "info",
  SWITCHYARD_KEY_PREFIX: "sy:",
  SWITCHYARD_COORDINATOR_TENANTS: "*",
  SWITCHYARD_HARNESS_SCOPES: "role:writer,team:ops",
  SWITCHYARD_EGRESS_ALLOWED_NETWORKS: "10.0.0.0/8,fd00::/8",
  SWITCHYARD_METRICS_PORT: "9464",
  OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
  ...Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`UNRELATED_${i}`, "x"])),
};

const zod = importCost("zod");
const none = importCost("node:fs");
console.log(`import zod (fresh node, median of ${runs}): ${zod.cpuMs.toFixed(1)} ms CPU, ${zod.wallMs.toFixed(1)} ms wall`);
console.log(`import node:fs (baseline):            ${none.cpuMs.toFixed(1)} ms CPU, ${none.wallMs.toFixed(1)} ms wall`);
console.log(`loadConfig({}):               ${perCall(500, () => loadConfig({})).toFixed(1)} µs per call`);
console.log(`loadConfig(busy, 209 vars):   ${perCall(500, () => loadConfig(busy)).toFixed(1)} µs per call`);
