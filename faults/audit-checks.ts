/**
 * Doubled transitions, read back from the audit table (one hash-chained row per transition, in commit order per
 * tenant). Each step's rows must follow
 *
 *     (dispatch (timeout | failed result))* dispatch accepted-result
 *
 * so a dispatch while an attempt is in flight, a timeout or result applied to an attempt already closed, or any
 * row after the step completed is a doubled transition. Also checked: a step is dispatched only after the steps it
 * needs were accepted (fan-in), the steps table agrees with its audit rows (final status, attempt counter = number
 * of dispatches), and every completed step has exactly one accepted result.
 *
 * Fan-out (the orchestrator workflow): a delegate step's `sub_query` row is its dispatch; an orchestrator's
 * `query` rows (one per sub-query) must fall within one of its attempts; a REPLY (`reply` allow, audited on the
 * origin) is delivered only for a delegate that finished — never more REPLYs than finished delegates, so none is
 * delivered twice; and a completed orchestrator's output names every sub-query exactly once.
 */
import { ORCHESTRATOR_STEP, SUB_QUERIES, type OrchestratorOutput } from "./handler.js";
import { STEPS } from "./workload.js";

export interface AuditRow {
  org_id: string;
  seq: string;
  action: string;
  verdict: string;
  task_id: string;
  step_id: string;
  envelope_id: string;
  reason: string;
}

export interface StepRow {
  org_id: string;
  task_id: string;
  step_id: string;
  status: string;
  attempt: number;
  /** Read for orchestrator steps only. */
  output?: unknown;
}

export interface Violation {
  kind: string;
  org: string;
  task: string;
  step: string;
  detail: string;
}

/** What the audit says about one step: its attempts in order, and which attempt's result was accepted. */
export interface StepHistory {
  org: string;
  task: string;
  step: string;
  /** WORK envelope id of each dispatched attempt (index 0 = attempt 1). */
  dispatches: string[];
  acceptedAttempt: number | null;
  acceptedCount: number;
  timeouts: number;
  failedResults: number;
  /** REPLYs delivered to this step (`reply` allow rows on it). */
  replies: number;
  /** Its delegates (`<step>.dN`) that finished: a result (accepted or failed) or a timeout. */
  finishedDelegates: number;
  firstDispatchSeq: number | null;
  acceptedSeq: number | null;
}

export interface AuditCheckResult {
  rows: number;
  histories: Map<string, StepHistory>;
  violations: Violation[];
  /** Rows of actions this workflow never produces (approvals, cancels, queries…), by action/verdict. */
  unexpected: Map<string, number>;
}

export const stepKey = (org: string, task: string, step: string) => `${org}/${task}/${step}`;

export function checkAuditRows(rows: readonly AuditRow[], steps: readonly StepRow[]): AuditCheckResult {
  const histories = new Map<string, StepHistory>();
  const violations: Violation[] = [];
  const unexpected = new Map<string, number>();
  // in flight: the attempt number whose outcome is awaited; 0: none; -1: completed.
  const inFlight = new Map<string, number>();

  const historyOf = (org: string, task: string, step: string): StepHistory => {
    const key = stepKey(org, task, step);
    const h = histories.get(key) ?? { org, task, step, dispatches: [], acceptedAttempt: null, acceptedCount: 0, timeouts: 0, failedResults: 0, replies: 0, finishedDelegates: 0, firstDispatchSeq: null, acceptedSeq: null };
    histories.set(key, h);
    return h;
  };

  for (const row of rows) {
    if (row.step_id === "" || row.task_id === "") {
      unexpected.set(`${row.action}/${row.verdict}`, (unexpected.get(`${row.action}/${row.verdict}`) ?? 0) + 1);
      continue;
    }
    const key = stepKey(row.org_id, row.task_id, row.step_id);
    const h = historyOf(row.org_id, row.task_id, row.step_id);
    const origin = /^(.+)\.d\d+$/.exec(row.step_id)?.[1];
    if (origin && (row.action === "result" || row.action === "timeout")) historyOf(row.org_id, row.task_id, origin).finishedDelegates += 1;
    const state = inFlight.get(key) ?? 0;
    const seq = Number(row.seq);
    const violation = (kind: string, detail: string) => violations.push({ kind, org: h.org, task: h.task, step: h.step, detail: `seq ${seq}: ${detail}` });

    if ((row.action === "dispatch" || row.action === "sub_query") && row.verdict === "allow") {
      if (state > 0) violation("doubled dispatch", `attempt ${h.dispatches.length + 1} dispatched while attempt ${state} was in flight`);
      if (state < 0) violation("dispatch after completion", `attempt ${h.dispatches.length + 1} dispatched after the step completed`);
      h.dispatches.push(row.envelope_id);
      h.firstDispatchSeq ??= seq;
      inFlight.set(key, h.dispatches.length);
    } else if (row.action === "result" && row.verdict === "accepted") {
      h.acceptedCount += 1;
      if (state <= 0) violation("doubled result", state < 0 ? "a second result accepted for a completed step" : "a result accepted with no attempt in flight");
      else h.acceptedAttempt = state;
      h.acceptedSeq ??= seq;
      inFlight.set(key, -1);
    } else if (row.action === "result" && row.verdict === "failed") {
      h.failedResults += 1;
      if (state <= 0) violation("doubled result", "a failed result applied with no attempt in flight");
      inFlight.set(key, state < 0 ? -1 : 0);
    } else if (row.action === "timeout") {
      h.timeouts += 1;
      const named = Number(/attempt (\d+)/.exec(row.reason)?.[1] ?? NaN);
      if (state <= 0) violation("doubled timeout", `a timeout of attempt ${named} applied with no attempt in flight (applied twice?)`);
      else if (named !== state) violation("doubled timeout", `a timeout names attempt ${named} while attempt ${state} was in flight`);
      inFlight.set(key, state < 0 ? -1 : 0);
    } else if (row.action === "query" && row.verdict === "accepted") {
      if (state <= 0) violation("query outside an attempt", state < 0 ? "a sub-query asked after the step completed" : "a sub-query asked with no attempt in flight");
    } else if (row.action === "reply" && row.verdict === "allow") {
      h.replies += 1;
      if (h.replies > h.finishedDelegates) violation("doubled reply", `REPLY ${h.replies} delivered with ${h.finishedDelegates} of its delegates finished`);
    } else if (row.action === "reply" && row.verdict === "orphaned") {
      // a REPLY to an attempt that completed or timed out: recorded, never delivered — fine
    } else {
      unexpected.set(`${row.action}/${row.verdict}`, (unexpected.get(`${row.action}/${row.verdict}`) ?? 0) + 1);
    }
  }

  checkFanIn(histories, violations);
  checkStepsTable(histories, steps, violations);
  return { rows: rows.length, histories, violations, unexpected };
}

/** A step is dispatched only after every step it needs has an accepted result (earlier in the chain). */
function checkFanIn(histories: Map<string, StepHistory>, violations: Violation[]): void {
  for (const h of histories.values()) {
    const needs = STEPS.find((s) => s.id === h.step)?.needs ?? [];
    for (const need of needs) {
      const needed = histories.get(stepKey(h.org, h.task, need));
      if (h.firstDispatchSeq === null) continue;
      if (!needed || needed.acceptedSeq === null || needed.acceptedSeq > h.firstDispatchSeq) {
        violations.push({ kind: "fan-in order", org: h.org, task: h.task, step: h.step, detail: `dispatched at seq ${h.firstDispatchSeq} before ${need} was accepted (${needed?.acceptedSeq ?? "never"})` });
      }
    }
  }
}

function checkStepsTable(histories: Map<string, StepHistory>, steps: readonly StepRow[], violations: Violation[]): void {
  for (const s of steps) {
    const h = histories.get(stepKey(s.org_id, s.task_id, s.step_id));
    const v = (kind: string, detail: string) => violations.push({ kind, org: s.org_id, task: s.task_id, step: s.step_id, detail });
    const dispatched = h?.dispatches.length ?? 0;
    if (s.attempt !== dispatched) v("attempts vs audit", `steps.attempt is ${s.attempt} but the audit has ${dispatched} dispatch rows`);
    if (s.status === "completed" && h?.acceptedCount !== 1) v("accepted results", `completed with ${h?.acceptedCount ?? 0} accepted result rows (expected exactly 1)`);
    if (s.status !== "completed" && (h?.acceptedCount ?? 0) > 0) v("accepted results", `status ${s.status} but the audit accepted a result`);
    if (s.step_id === ORCHESTRATOR_STEP && s.status === "completed") {
      const replies = (s.output as OrchestratorOutput | null)?.replies ?? [];
      if (JSON.stringify([...replies].sort()) !== JSON.stringify([...SUB_QUERIES].sort())) {
        v("fan-out replies", `completed having taken replies [${replies.join(", ")}], expected each of [${SUB_QUERIES.join(", ")}] once`);
      }
    }
  }
}
