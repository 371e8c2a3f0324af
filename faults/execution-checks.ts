/**
 * Handler executions, from the records every worker process wrote (faults/handler.ts), compared with the audit:
 * how many times each dispatched step attempt ran (more than once is allowed — delivery is at-least-once — and
 * reported as a distribution), and what must never happen: work that ran with no dispatch audit row for its WORK
 * envelope (an ungoverned hop), two different WORK envelopes for one attempt (a doubled dispatch), a result
 * accepted for an attempt no handler finished, and a fan-in step that ran without the outputs of all its needs.
 * An orchestrator's resumed turns run on REPLY envelopes, not WORK: they count as executions but are left out of
 * the per-attempt WORK checks (its first turn, on the WORK, is checked like any step).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ExecutionRecord } from "./handler.js";
import { stepKey, type StepHistory, type Violation } from "./audit-checks.js";
import { STEPS } from "./workload.js";

export interface ExecutionCheckResult {
  /** Executions started (records with phase "start"). */
  started: number;
  finished: number;
  /** Processes that ran handlers. */
  pids: number;
  /** Dispatched step attempts by how many times their handler started: "0", "1", "2", "3+". */
  perAttempt: Record<string, number>;
  violations: Violation[];
}

export function readExecutions(dir: string): ExecutionRecord[] {
  const records: ExecutionRecord[] = [];
  for (const file of readdirSync(dir)) {
    if (!file.endsWith(".jsonl")) continue;
    for (const line of readFileSync(join(dir, file), "utf8").split("\n")) {
      if (!line) continue;
      try {
        records.push(JSON.parse(line) as ExecutionRecord);
      } catch {
        // a line torn by kill -9: the execution it started is counted by its other record, if any
      }
    }
  }
  return records;
}

export function checkExecutions(records: readonly ExecutionRecord[], histories: ReadonlyMap<string, StepHistory>): ExecutionCheckResult {
  const violations: Violation[] = [];
  const byAttempt = new Map<string, { starts: number; ends: number; works: Set<string> }>();
  const dispatchedWorks = new Set<string>();
  for (const h of histories.values()) for (const w of h.dispatches) dispatchedWorks.add(w);
  const pids = new Set<number>();
  let started = 0;
  let finished = 0;

  for (const r of records) {
    pids.add(r.pid);
    if (r.reply !== undefined) {
      if (r.phase === "end") finished += 1;
      else started += 1;
      continue;
    }
    const key = `${stepKey(r.org, r.task, r.step)}#${r.attempt}`;
    const entry = byAttempt.get(key) ?? { starts: 0, ends: 0, works: new Set<string>() };
    byAttempt.set(key, entry);
    entry.works.add(r.work);
    if (r.phase === "end") {
      finished += 1;
      entry.ends += 1;
      continue;
    }
    started += 1;
    entry.starts += 1;
    const v = (kind: string, detail: string) => violations.push({ kind, org: r.org, task: r.task, step: r.step, detail: `attempt ${r.attempt} (pid ${r.pid}): ${detail}` });
    if (!dispatchedWorks.has(r.work)) v("ungoverned execution", `WORK ${r.work} ran but no dispatch audit row names it`);
    const needs = [...(STEPS.find((s) => s.id === r.step)?.needs ?? [])].sort();
    if (JSON.stringify(r.needs ?? []) !== JSON.stringify(needs)) v("fan-in input", `ran with the outputs of [${(r.needs ?? []).join(", ")}], needs [${needs.join(", ")}]`);
  }

  const perAttempt: Record<string, number> = { "0": 0, "1": 0, "2": 0, "3+": 0 };
  for (const h of histories.values()) {
    for (const [i, work] of h.dispatches.entries()) {
      const attempt = i + 1;
      const entry = byAttempt.get(`${stepKey(h.org, h.task, h.step)}#${attempt}`);
      const starts = entry?.starts ?? 0;
      perAttempt[starts >= 3 ? "3+" : String(starts)]! += 1;
      if (entry && entry.works.size > 1) {
        violations.push({ kind: "doubled dispatch", org: h.org, task: h.task, step: h.step, detail: `attempt ${attempt} ran as ${entry.works.size} different WORK envelopes: ${[...entry.works].join(", ")}` });
      } else if (entry && !entry.works.has(work)) {
        violations.push({ kind: "doubled dispatch", org: h.org, task: h.task, step: h.step, detail: `attempt ${attempt} ran as WORK ${[...entry.works][0]}, but its dispatch audit row names ${work}` });
      }
      if (h.acceptedAttempt === attempt && (entry?.ends ?? 0) === 0) {
        violations.push({ kind: "result without execution", org: h.org, task: h.task, step: h.step, detail: `attempt ${attempt}'s result was accepted but no handler finished it` });
      }
    }
  }
  return { started, finished, pids: pids.size, perAttempt, violations };
}
