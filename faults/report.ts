/**
 * The report: one object (printed as a table, or as one JSON line with `--json`) and the verdict against the
 * target — every task completed, none failed or stuck, no doubled transition, no process that exited on its own,
 * every tenant's chain verifies — plus the conditions without which a pass would mean nothing (work in flight
 * at every fault, every fault injected, audit rows and execution records present).
 */
import type { Violation } from "./audit-checks.js";
import type { ExecutionCheckResult } from "./execution-checks.js";
import type { UnexpectedExit } from "./fleet.js";
import type { FaultResult } from "./injector.js";
import type { DeadLetter } from "./monitor.js";
import type { ChainVerification, TaskOutcome } from "./outcome.js";

export interface RunReport {
  setup: { coordinators: number; harnessesPerRole: number; gateways: number; tasks: number; faults: boolean; seed: number };
  durationMs: number;
  /** How the wait after the faults ended. */
  settled: string;
  starts: { started: number; failed: number; retries: number; replayed: number; errors: Record<string, number> };
  tasks: TaskOutcome;
  auditRows: number;
  doubled: Violation[];
  unexpectedAuditRows: Record<string, number>;
  /** With `--limits`: the most branch steps of one customer in flight at once, replayed from the chains. */
  keyPeak?: number;
  executions: Omit<ExecutionCheckResult, "violations">;
  faults: FaultResult[];
  deadLetters: DeadLetter[];
  unexpectedExits: UnexpectedExit[];
  chains: ChainVerification[];
}

export function missedTargets(r: RunReport): string[] {
  const misses: string[] = [];
  const n = r.setup.tasks;
  if (r.tasks.completed !== n) misses.push(`${r.tasks.completed}/${n} tasks completed`);
  if (r.tasks.failed > 0) misses.push(`${r.tasks.failed} tasks failed`);
  if (r.tasks.stuck.length > 0) misses.push(`${r.tasks.stuck.length} tasks stuck`);
  if (r.doubled.length > 0) misses.push(`${r.doubled.length} doubled transitions or ordering violations`);
  if (r.unexpectedExits.length > 0) misses.push(`${r.unexpectedExits.length} processes exited on their own`);
  for (const c of r.chains) if (!c.ok) misses.push(`audit chain of ${c.tenant} does not verify: ${c.detail}`);
  if (r.starts.failed > 0 || r.starts.started !== n) misses.push(`${r.starts.started}/${n} tasks started through the API`);
  if (r.tasks.inDatabase !== r.starts.started) misses.push(`${r.tasks.inDatabase} tasks in the database for ${r.starts.started} started (idempotency keys must make one each)`);
  // Without these a green table would prove nothing.
  if (r.auditRows === 0) misses.push("no audit rows were read: nothing was checked");
  const completedSteps = r.tasks.completed * 4;
  if (r.executions.finished < completedSteps) misses.push(`${r.executions.finished} handler executions recorded for ${completedSteps} completed steps: the records are incomplete`);
  for (const f of r.faults) {
    if (f.error) misses.push(`fault ${f.kind} was not injected: ${f.error}`);
    else if (f.inFlight === 0) misses.push(`fault ${f.kind} landed with no task in flight`);
  }
  return misses;
}

const s = (ms: number | null) => (ms === null ? "—" : `${(ms / 1000).toFixed(1)} s`);

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd()).join("\n");
}

export function formatReport(r: RunReport): string {
  const n = r.setup.tasks;
  const misses = missedTargets(r);
  const mark = (ok: boolean) => (ok ? "ok" : "MISS");
  const chainsOk = r.chains.filter((c) => c.ok).length;
  const out: string[] = [];
  if (r.settled.startsWith("aborted")) out.push(`RUN ABORTED (${r.settled}): the figures below are partial`, "");
  out.push(
    `Switchyard fault suite: ${r.setup.coordinators} coordinators, ${r.setup.harnessesPerRole} harnesses per role, ${r.setup.gateways} gateway; ` +
      `${n} fan-out/fan-in tasks (every fifth an orchestrator fanning out to 3 sub-queries); ${r.setup.faults ? `${r.faults.length} faults` : "no faults"}; seed ${r.setup.seed}; ${s(r.durationMs)}; ${r.settled}`,
    "",
    table([
      ["", "measured", "target", ""],
      ["completed", `${r.tasks.completed} / ${n}`, `${n} / ${n}`, mark(r.tasks.completed === n)],
      ["failed", String(r.tasks.failed), "0", mark(r.tasks.failed === 0)],
      ["stuck", String(r.tasks.stuck.length), "0", mark(r.tasks.stuck.length === 0)],
      ["doubled transitions", `${r.doubled.length}${r.doubled.length ? ` (in ${new Set(r.doubled.map((v) => `${v.task}/${v.step}`)).size} steps of ${new Set(r.doubled.map((v) => v.task)).size} tasks)` : ""}`, "0", mark(r.doubled.length === 0)],
      ["unexpected exits", String(r.unexpectedExits.length), "0", mark(r.unexpectedExits.length === 0)],
      ["audit chains verify", `${chainsOk} / ${r.chains.length}`, `${r.chains.length} / ${r.chains.length}`, mark(chainsOk === r.chains.length && r.chains.length > 0)],
      ["dead letters", String(r.deadLetters.length), "(reported)", ""],
    ]),
    "",
    `starts through the API: ${r.starts.started} / ${n}, ${r.starts.retries} sent again, ${r.starts.replayed} answered created:false (a lost answer replayed), ${r.starts.failed} gave up` +
      (Object.keys(r.starts.errors).length ? `; errors ${Object.entries(r.starts.errors).map(([k, v]) => `${k}×${v}`).join(" ")}` : ""),
    `handler executions per dispatched step attempt: ${Object.entries(r.executions.perAttempt).map(([k, v]) => `${k}×: ${v}`).join(", ")} ` +
      `(${r.executions.started} started, ${r.executions.finished} finished, in ${r.executions.pids} processes); ${r.auditRows} audit rows checked`,
  );
  if (r.keyPeak !== undefined) out.push(`concurrency key (task.input.customer): at most ${r.keyPeak} branch steps of one customer in flight, from the audit chains`);
  if (Object.keys(r.unexpectedAuditRows).length) out.push(`audit rows this workflow does not produce: ${Object.entries(r.unexpectedAuditRows).map(([k, v]) => `${k}×${v}`).join(" ")}`);
  if (r.faults.length) {
    out.push("", table([
      ["fault", "at", "in flight", "action", "recovery"],
      ...r.faults.map((f) => [`${f.kind}${f.target ? ` (${f.target})` : ""}`, s(f.atMs), String(f.inFlight), s(f.actionMs), f.error ? `NOT INJECTED: ${f.error}` : f.nothingLeft ? "no work left" : f.recoveryMs === null ? "NONE" : s(f.recoveryMs)]),
    ]));
  }
  if (r.tasks.stuck.length) {
    out.push("", `stuck tasks (${r.tasks.stuck.length}) by step states (step:status/attempt):`);
    for (const { shape, count } of r.tasks.stuckShapes.slice(0, 8)) out.push(`  ${String(count).padStart(5)} × ${shape}`);
    out.push(`  e.g. ${r.tasks.stuck.slice(0, 5).map((t) => `${t.org}/${t.task}`).join(", ")}`);
  }
  if (r.tasks.failures.length) {
    out.push("", "failed tasks by error:");
    for (const { error, count } of r.tasks.failures.slice(0, 5)) out.push(`  ${String(count).padStart(5)} × ${error}`);
  }
  if (r.doubled.length) {
    out.push("", "doubled transitions and ordering violations:");
    for (const v of r.doubled.slice(0, 15)) out.push(`  ${v.kind}: ${v.org}/${v.task} step ${v.step}: ${v.detail}`);
    if (r.doubled.length > 15) out.push(`  … and ${r.doubled.length - 15} more`);
  }
  if (r.deadLetters.length) {
    const reasons = new Map<string, number>();
    for (const d of r.deadLetters) reasons.set(`${d.stream}: ${d.reason}`, (reasons.get(`${d.stream}: ${d.reason}`) ?? 0) + 1);
    out.push("", "dead letters:", ...[...reasons].map(([reason, count]) => `  ${String(count).padStart(5)} × ${reason.slice(0, 200)}`));
  }
  if (r.unexpectedExits.length) {
    out.push("", "processes that exited on their own (each was started again):");
    for (const e of r.unexpectedExits) out.push(`  ${e.name} at ${s(e.atMs)}: ${e.signal ?? `exit code ${e.code}`}: ${e.error}`);
  }
  out.push("", ...r.chains.map((c) => `audit verify --tenant ${c.tenant}: ${c.ok ? "ok" : "FAILED"} (${c.detail})`));
  out.push("", misses.length ? `TARGET MISSED:\n${misses.map((m) => `  - ${m}`).join("\n")}` : `TARGET MET: ${n} / ${n} completed, 0 stuck, 0 doubled, 0 unexpected exits, every chain verifies`);
  return out.join("\n");
}

/** The report as one JSON line; `full` keeps every stuck task, violation and exit tail (for the run directory). */
export function formatJson(r: RunReport, full = false): string {
  const misses = missedTargets(r);
  const trimmed = full
    ? r
    : { ...r, tasks: { ...r.tasks, stuck: r.tasks.stuck.slice(0, 50) }, doubled: r.doubled.slice(0, 100), unexpectedExits: r.unexpectedExits.map(({ tail: _tail, ...e }) => e) };
  return JSON.stringify({ ...trimmed, stuckCount: r.tasks.stuck.length, doubledCount: r.doubled.length, targetMet: misses.length === 0, misses });
}
