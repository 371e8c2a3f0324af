/**
 * The fault suite's checks (faults/), which `npm run faults` relies on to call a run good or bad: each must
 * catch what it exists to catch, and a run with nothing to check must not pass.
 */
import { describe, expect, it } from "vitest";
import { checkAuditRows, type AuditRow, type StepRow } from "../../faults/audit-checks.js";
import { checkExecutions } from "../../faults/execution-checks.js";
import type { ExecutionRecord } from "../../faults/handler.js";
import { missedTargets, type RunReport } from "../../faults/report.js";
import { diedOf } from "../../faults/fleet.js";
import { checkKeyPeaks } from "../../faults/key-checks.js";

const ORG = "t";
const TASK = "task-1";
let seq = 0;
const row = (step: string, action: string, verdict: string, envelope = `env-${seq + 1}`, reason = ""): AuditRow => ({
  org_id: ORG,
  seq: String(++seq),
  action,
  verdict,
  task_id: TASK,
  step_id: step,
  envelope_id: envelope,
  reason,
});
const dispatch = (step: string, work: string) => row(step, "dispatch", "allow", work);
const accepted = (step: string) => row(step, "result", "accepted");
const timeout = (step: string, attempt: number) => row(step, "timeout", "failed", `due-${seq}`, `attempt ${attempt} got no result within 8000 ms`);
const stepRow = (step: string, status: string, attempt: number): StepRow => ({ org_id: ORG, task_id: TASK, step_id: step, status, attempt });
const exec = (step: string, attempt: number, work: string, phase: "start" | "end", needs: string[] = []): ExecutionRecord => ({
  phase, pid: 1, at: 0, org: ORG, task: TASK, step, attempt, work, ...(phase === "start" ? { needs } : {}),
});

/** A clean run of one task: a, then b and c (b retried once after a timeout), then d. */
function cleanRun() {
  seq = 0;
  const rows = [
    dispatch("a", "w-a1"), accepted("a"),
    dispatch("b", "w-b1"), dispatch("c", "w-c1"),
    timeout("b", 1), dispatch("b", "w-b2"),
    accepted("c"), accepted("b"),
    dispatch("d", "w-d1"), accepted("d"),
  ];
  const steps = [stepRow("a", "completed", 1), stepRow("b", "completed", 2), stepRow("c", "completed", 1), stepRow("d", "completed", 1)];
  const execs = [
    exec("a", 1, "w-a1", "start"), exec("a", 1, "w-a1", "end"),
    exec("b", 1, "w-b1", "start", ["a"]), // its process was killed: no end
    exec("c", 1, "w-c1", "start", ["a"]), exec("c", 1, "w-c1", "end"),
    exec("b", 2, "w-b2", "start", ["a"]), exec("b", 2, "w-b2", "end"),
    exec("b", 2, "w-b2", "start", ["a"]), exec("b", 2, "w-b2", "end"), // redelivered: at-least-once, allowed
    exec("d", 1, "w-d1", "start", ["b", "c"]), exec("d", 1, "w-d1", "end"),
  ];
  return { rows, steps, execs };
}

const kinds = (violations: Array<{ kind: string }>) => violations.map((v) => v.kind);

describe("fault suite checks", () => {
  it("find nothing wrong in a clean run, and count executions per attempt", () => {
    const { rows, steps, execs } = cleanRun();
    const audit = checkAuditRows(rows, steps);
    expect(audit.violations).toEqual([]);
    const executions = checkExecutions(execs, audit.histories);
    expect(executions.violations).toEqual([]);
    expect(executions.perAttempt).toEqual({ "0": 0, "1": 4, "2": 1, "3+": 0 });
  });

  it("catch a dispatch while an attempt is in flight, and the two WORK envelopes it ran as", () => {
    const { rows, steps, execs } = cleanRun();
    rows.splice(3, 0, dispatch("b", "w-b1x"));
    const audit = checkAuditRows(rows, steps.map((s) => (s.step_id === "b" ? { ...s, attempt: 3 } : s)));
    expect(kinds(audit.violations)).toContain("doubled dispatch");
    const executions = checkExecutions([...execs, exec("b", 1, "w-b1x", "start", ["a"])], audit.histories);
    expect(kinds(executions.violations)).toContain("doubled dispatch");
  });

  it("catch a timeout applied twice and a second accepted result", () => {
    const { rows, steps } = cleanRun();
    rows.splice(5, 0, timeout("b", 1));
    rows.push(accepted("d"));
    expect(kinds(checkAuditRows(rows, steps).violations)).toEqual(expect.arrayContaining(["doubled timeout", "doubled result", "accepted results"]));
  });

  it("catch a fan-in step dispatched before one of its needs was accepted, or run without its output", () => {
    seq = 0;
    const rows = [dispatch("a", "w-a1"), accepted("a"), dispatch("b", "w-b1"), dispatch("c", "w-c1"), accepted("b"), dispatch("d", "w-d1"), accepted("c"), accepted("d")];
    const steps = ["a", "b", "c", "d"].map((s) => stepRow(s, "completed", 1));
    const audit = checkAuditRows(rows, steps);
    expect(audit.violations).toEqual([expect.objectContaining({ kind: "fan-in order", step: "d" })]);
    const executions = checkExecutions([exec("d", 1, "w-d1", "start", ["b"]), exec("d", 1, "w-d1", "end")], audit.histories);
    expect(kinds(executions.violations)).toContain("fan-in input");
  });

  it("catch work that ran without a dispatch audit row, and a result accepted that no handler finished", () => {
    const { rows, steps, execs } = cleanRun();
    const audit = checkAuditRows(rows, steps);
    const withoutD = execs.filter((e) => !(e.step === "d" && e.phase === "end"));
    const found = checkExecutions([...withoutD, exec("a", 1, "w-forged", "start")], audit.histories);
    expect(kinds(found.violations)).toEqual(expect.arrayContaining(["ungoverned execution", "result without execution"]));
  });

  it("catch a steps table that disagrees with its audit rows", () => {
    const { rows, steps } = cleanRun();
    const audit = checkAuditRows(rows, steps.map((s) => (s.step_id === "c" ? { ...s, attempt: 2 } : s)));
    expect(audit.violations).toEqual([expect.objectContaining({ kind: "attempts vs audit", step: "c" })]);
  });

  it("accept an orchestrator's fan-out, and catch a REPLY with no delegate finished for it, or a reply its output lost", () => {
    seq = 0;
    const delegates = ["o.d1", "o.d2", "o.d3"];
    const rows = [
      dispatch("o", "w-o1"),
      ...delegates.map(() => row("o", "query", "accepted")),
      ...delegates.map((d) => row(d, "sub_query", "allow", `w-${d}`)),
      // REPLYs are audited on the origin, each after a delegate finished.
      ...delegates.flatMap((d) => [accepted(d), row("o", "reply", "allow")]),
      accepted("o"),
    ];
    const output = { step: "o", attempt: 1, replies: ["q2", "q3", "q1"] };
    const steps = [{ ...stepRow("o", "completed", 1), output }, ...delegates.map((d) => stepRow(d, "completed", 1))];
    const audit = checkAuditRows(rows, steps);
    expect(audit.violations).toEqual([]);
    expect(audit.unexpected.size).toBe(0);
    const resumed = (reply: string, phase: "start" | "end"): ExecutionRecord => ({ ...exec("o", 1, `reply-${reply}`, phase), reply });
    const execs = [
      exec("o", 1, "w-o1", "start"), exec("o", 1, "w-o1", "end"),
      ...delegates.flatMap((d) => [exec(d, 1, `w-${d}`, "start"), exec(d, 1, `w-${d}`, "end")]),
      ...["q2", "q3", "q1"].flatMap((q) => [resumed(q, "start"), resumed(q, "end")]),
    ];
    expect(checkExecutions(execs, audit.histories).violations).toEqual([]);

    const doubled = checkAuditRows([...rows.slice(0, -1), row("o", "reply", "allow"), accepted("o")], steps);
    expect(doubled.violations).toEqual([expect.objectContaining({ kind: "doubled reply", step: "o" })]);
    const lost = checkAuditRows(rows, [{ ...steps[0]!, output: { ...output, replies: ["q2", "q2", "q1"] } }, ...steps.slice(1)]);
    expect(lost.violations).toEqual([expect.objectContaining({ kind: "fan-out replies", step: "o" })]);
  });

  it("replay a concurrency key from the chain: a third branch step of one customer in flight is caught, others are not", () => {
    seq = 0;
    const on = (task: string, r: AuditRow): AuditRow => ({ ...r, task_id: task });
    const customers = new Map([["t1", "c1"], ["t2", "c1"], ["t3", "c2"], ["t4", "c1"]]);
    const rows = [
      on("t1", dispatch("b", "w1")), on("t2", dispatch("c", "w2")), on("t3", dispatch("b", "w3")),
      // A timeout closes t1's attempt: its retry is the second, not the third, in flight.
      on("t1", timeout("b", 1)), on("t1", dispatch("b", "w4")),
    ];
    expect(checkKeyPeaks(rows, customers)).toEqual({ peak: 2, violations: [] });
    const over = checkKeyPeaks([...rows, on("t4", dispatch("c", "w5"))], customers);
    expect(over.peak).toBe(3);
    expect(over.violations).toMatchObject([{ kind: "concurrency key exceeded", task: "t4", step: "c" }]);
  });

  it("do not let a run with nothing checked meet the target", () => {
    const empty: RunReport = {
      setup: { coordinators: 2, harnessesPerRole: 2, gateways: 1, tasks: 0 as number, faults: true, seed: 1 },
      durationMs: 0,
      settled: "every task finished",
      starts: { started: 0, failed: 0, retries: 0, replayed: 0, errors: {} },
      tasks: { byStatus: {}, completed: 0, failed: 0, stuck: [], stuckShapes: [], failures: [], inDatabase: 0 },
      auditRows: 0,
      doubled: [],
      unexpectedAuditRows: {},
      executions: { started: 0, finished: 0, pids: 0, perAttempt: {} },
      faults: [{ kind: "kill -9 gateway", target: "gateway", atMs: 1, inFlight: 0, actionMs: 1, recoveryMs: null, nothingLeft: true }],
      deadLetters: [],
      unexpectedExits: [],
      chains: [{ tenant: "t", ok: false, rows: 0, detail: "no audit rows: nothing was verified" }],
    };
    expect(missedTargets(empty)).toEqual(
      expect.arrayContaining([
        "no audit rows were read: nothing was checked",
        "fault kill -9 gateway landed with no task in flight",
        "audit chain of t does not verify: no audit rows: nothing was verified",
      ]),
    );
  });

  it("name the error a process died of, not one it logged and survived", () => {
    const tail = [
      `{"level":50,"err":{"type":"Error","message":"connect ECONNREFUSED"},"msg":"periodic job failed"}`,
      "node:events:502",
      "      throw er; // Unhandled 'error' event",
      "Error: Connection terminated unexpectedly",
      "    at Connection.<anonymous> (node_modules/pg/lib/client.js:204:73)",
      "Emitted 'error' event on Client instance at:",
      "Node.js v20.20.2",
    ];
    expect(diedOf(tail)).toBe("Unhandled 'error' event: Error: Connection terminated unexpectedly");
    expect(diedOf(["error: UNAVAILABLE: cannot connect: connect ECONNREFUSED 127.0.0.1:5453"])).toBe("error: UNAVAILABLE: cannot connect: connect ECONNREFUSED 127.0.0.1:5453");
  });
});
