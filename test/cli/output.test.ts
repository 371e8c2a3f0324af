import { describe, expect, it } from "vitest";
import { hopRows, formatHopsTable } from "../../src/devtools/demo/hops-table.js";
import { exitCodeFor, formatErrorJson, formatErrorLine, formatTable, toCliError } from "../../src/cli/output.js";
import { runCli } from "../../src/cli/main.js";
import type { AuditRow } from "../../src/domain.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";

function row(seq: number, atMs: number, extra: Partial<AuditRow> = {}): AuditRow {
  return {
    orgId: "demo", seq, prevHash: "p", hash: "h", action: "dispatch", actor: "coordinator", destination: "role:writer", verdict: "allow",
    rule: "builtin:default", reason: "", payloadHash: "", cost: 1.25, taskId: "t", stepId: "draft", envelopeId: "e", atMs, ...extra,
  };
}

describe("output helpers", () => {
  it("maps validation codes to exit 2 and everything else to 1", () => {
    for (const code of [ErrorCode.InvalidArgument, ErrorCode.InvalidWorkflow, ErrorCode.InvalidPolicy, ErrorCode.Config]) {
      expect(exitCodeFor(new SwitchyardError(code, "x"))).toBe(2);
    }
    for (const code of [ErrorCode.NotFound, ErrorCode.AuditBroken, ErrorCode.Unavailable, ErrorCode.Internal, ErrorCode.Timeout]) {
      expect(exitCodeFor(new SwitchyardError(code, "x"))).toBe(1);
    }
    expect(exitCodeFor(new SwitchyardError(ErrorCode.Cancelled, "x", { details: { interrupted: true } }))).toBe(130);
  });

  it("formats errors as one line or one JSON object", () => {
    const error = new SwitchyardError(ErrorCode.NotFound, "no task t", { details: { orgId: "o" }, cause: new Error("inner") });
    expect(formatErrorLine(error)).toBe("error: NOT_FOUND: no task t");
    expect(JSON.parse(formatErrorJson(error))).toEqual({ error: { code: "NOT_FOUND", message: "no task t", details: { orgId: "o" } } });
  });

  it("names unreachable servers UNAVAILABLE, even when pg hides the cause in an AggregateError", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" });
    expect(toCliError(refused).code).toBe(ErrorCode.Unavailable);
    const aggregate = new AggregateError([refused], "");
    const mapped = toCliError(aggregate);
    expect(mapped.code).toBe(ErrorCode.Unavailable);
    expect(mapped.message).toContain("ECONNREFUSED");
    expect(toCliError(Object.assign(new Error('database "x" does not exist'), { code: "3D000" })).message).toMatch(/switchyard migrate/);
    expect(toCliError(new Error("boom")).code).toBe(ErrorCode.Internal);
  });

  it("pads table columns and right-aligns numbers", () => {
    const text = formatTable(["name", "cost"], [["a", 1.5], ["longer", 10]]);
    expect(text.split("\n")).toEqual(["NAME    COST", "a        1.5", "longer    10"]);
    expect(formatTable(["x"], [])).toBe("X\n(none)");
  });

  it("hop rows carry the ms since the task's previous audit row", () => {
    const rows = [row(4, 1000), row(5, 1250, { action: "result", actor: "worker:role:writer", verdict: "accepted", rule: "" }), row(9, 1300)];
    expect(hopRows(rows).map((r) => [r[0], r[8]])).toEqual([
      [4, "+0"],
      [5, "+250"],
      [9, "+50"],
    ]);
    const table = formatHopsTable(rows).split("\n");
    expect(table[0]).toMatch(/^SEQ\s+STEP\s+ACTION\s+ACTOR\s+DESTINATION\s+VERDICT\s+RULE\s+COST\s+\+MS$/);
    expect(table[2]).toMatch(/5\s+draft\s+result\s+worker:role:writer\s+role:writer\s+accepted\s+-\s+1\.25\s+\+250/);
  });
});

describe("usage errors", () => {
  async function run(argv: string[]) {
    let stdout = "";
    let stderr = "";
    const code = await runCli(argv, {
      env: {},
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: (t: string) => (stderr += t) },
      handleSignals: false,
    });
    return { code, stdout, stderr };
  }

  it("exits 2 with error: INVALID_ARGUMENT for unknown commands, options and missing arguments", async () => {
    const unknown = await run(["nonsense"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^error: INVALID_ARGUMENT: unknown command 'nonsense'/);
    const option = await run(["audit", "verify", "--tenant", "t", "--bogus"]);
    expect(option.code).toBe(2);
    expect(option.stderr).toMatch(/^error: INVALID_ARGUMENT: unknown option '--bogus'/);
    const missing = await run(["task", "get", "--tenant", "t", "--json"]);
    expect(missing.code).toBe(2);
    expect(JSON.parse(missing.stdout).error).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/missing required argument 'id'/) });
    const group = await run(["task"]);
    expect(group.code).toBe(2);
    expect(group.stderr).toMatch(/Usage: switchyard task/);
    const badRole = await run(["start", "harness", "--handler", "x.ts"]);
    expect(badRole.code).toBe(2);
    expect(badRole.stderr).toMatch(/exactly one of --role or --team/);
  });

  it("prints help on stdout and exits 0 for --help", async () => {
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage: switchyard/);
    for (const group of ["demo", "migrate", "start", "workflow", "policy", "task", "approval", "audit", "dlq"]) expect(help.stdout).toContain(group);
    const sub = await run(["task", "start", "--help"]);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toMatch(/--idempotency-key/);
  });
});
