/**
 * The bench report: the table with ratios against the baselines measured in the same run, the targets, and the
 * final JSON line.
 */
import type { ScenarioResult } from "./support.js";

export const REQUIRED_KEYS = [
  "steps_per_s",
  "hops_per_s",
  "raw_relay_hops_per_s",
  "bullmq_jobs_per_s",
  "step_p50_ms",
  "step_p99_ms",
  "callbacks_per_s",
  "egress_added_ms",
  "ingest_per_s",
  "reply_added_ms",
  "starts_per_s",
  "start_p99_ms",
  "hops_per_s_2_coordinators",
  "shard_takeover_ms",
  "lease_ttl_ms",
  "soak_rss_growth_pct",
] as const;

export const BASELINES = { rawRelay: "raw_relay_hops_per_s", bullmq: "bullmq_jobs_per_s" } as const;

export interface Target {
  label: string;
  /** true/false when decidable, undefined when a figure it needs was not measured. */
  check(values: ReadonlyMap<string, number>): boolean | undefined;
}

const atLeast = (key: string, min: number): Target => ({
  label: `${key} ≥ ${formatNumber(min)}`,
  check: (v) => (v.has(key) ? v.get(key)! >= min : undefined),
});
const atMost = (key: string, max: number): Target => ({
  label: `${key} ≤ ${formatNumber(max)}`,
  check: (v) => (v.has(key) ? v.get(key)! <= max : undefined),
});

export const TARGETS: readonly Target[] = [
  atLeast("steps_per_s", 7_000),
  {
    label: `steps_per_s ≥ 1.0 × ${BASELINES.bullmq}`,
    check: (v) => (v.has("steps_per_s") && v.has(BASELINES.bullmq) ? v.get("steps_per_s")! >= v.get(BASELINES.bullmq)! : undefined),
  },
  atLeast("hops_per_s", 12_000),
  atMost("step_p99_ms", 25),
  atLeast("callbacks_per_s", 3_000),
  atLeast("ingest_per_s", 2_000),
  atLeast("starts_per_s", 2_000),
  atMost("start_p99_ms", 50),
  {
    label: "shard_takeover_ms ≤ lease_ttl_ms + 1,000",
    check: (v) => (v.has("shard_takeover_ms") && v.has("lease_ttl_ms") ? v.get("shard_takeover_ms")! <= v.get("lease_ttl_ms")! + 1_000 : undefined),
  },
  atMost("soak_rss_growth_pct", 10),
  atMost("cli_help_ms", 400),
  atMost("cli_task_start_ms", 600),
];

export function formatNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  return n.toLocaleString("en-US", { maximumFractionDigits: Math.abs(n) >= 100 ? 0 : 2 });
}

export function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`;
}

function ratio(value: number, unit: string, base: number | undefined): string {
  if (!unit.endsWith("/s") || base === undefined || base <= 0) return "—";
  return `${(value / base).toFixed(2)}×`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const right = (c: number): boolean => c === 1 || c === 3 || c === 4;
  return rows
    .map((r) => r.map((cell, c) => (right(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join("  ").trimEnd())
    .join("\n");
}

/** The human report: environment, figures with ratios against both baselines, targets, where the time went. */
export function formatReport(results: readonly ScenarioResult[], environment: readonly string[], options: { quick: boolean }): string {
  const values = measuredValues(results);
  const rows = [["figure", "value", "unit", "× raw relay", "× BullMQ", "scenario"]];
  for (const r of results) {
    for (const m of r.measurements) {
      rows.push([m.name, formatNumber(m.value), m.unit, ratio(m.value, m.unit, values.get(BASELINES.rawRelay)), ratio(m.value, m.unit, values.get(BASELINES.bullmq)), r.scenario.name]);
    }
  }
  for (const key of REQUIRED_KEYS) if (!values.has(key)) rows.push([key, "—", "", "", "", "not measured"]);

  const out = [`Switchyard bench (${options.quick ? "QUICK smoke run: figures are indicative only" : "full run"})`, ...environment.map((l) => `  ${l}`), "", table(rows), "", "targets:"];
  for (const t of TARGETS) {
    const ok = t.check(values);
    out.push(`  ${ok === undefined ? "–" : ok ? "✔" : "✘"} ${t.label}${ok === undefined ? " (not measured)" : ""}`);
  }
  out.push("", "where the time goes:");
  for (const r of results) {
    const phases = r.phases.map((p) => `${p.name} ${formatMs(p.ms)}`).join(" · ");
    out.push(`  ${r.scenario.name} ${formatMs(r.elapsedMs)}: ${phases}${r.error ? `  ✘ ${r.error.message}` : ""}`);
    for (const m of r.measurements) if (m.extra) out.push(`    ${m.name}: ${JSON.stringify(m.extra)}`);
  }
  return out.join("\n");
}

function measuredValues(results: readonly ScenarioResult[]): Map<string, number> {
  const values = new Map<string, number>();
  for (const r of results) for (const m of r.measurements) if (Number.isFinite(m.value)) values.set(m.name, m.value);
  return values;
}

const round = (n: number): number => Math.round(n * 100) / 100;

/** The machine line: every required key (null when missing), every other figure, and run metadata. */
export function formatJsonLine(results: readonly ScenarioResult[], options: { quick: boolean }): string {
  const values = measuredValues(results);
  const line: Record<string, unknown> = {};
  for (const key of REQUIRED_KEYS) line[key] = values.has(key) ? round(values.get(key)!) : null;
  for (const [key, value] of values) if (!(key in line)) line[key] = round(value);
  line.mode = options.quick ? "quick" : "full";
  line.failed = results.filter((r) => r.error).map((r) => r.scenario.name);
  line.details = Object.fromEntries(results.flatMap((r) => r.measurements.filter((m) => m.extra).map((m) => [m.name, m.extra])));
  return JSON.stringify(line);
}
