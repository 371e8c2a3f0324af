/**
 * The fault suite's small variant inside `npm test`: the suite itself (`faults/run.ts`) with 2 coordinator
 * processes, 2 harnesses per role and a gateway on its own Redis and PostgreSQL, a fan-out/fan-in workload through
 * the API, no faults. Every task must complete with nothing doubled — the case that stranded half the tasks when
 * two coordinators decided on stale step states.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { missingServiceBinaries } from "../support/own-services.js";
import { REPO_ROOT } from "../support/processes.js";
import type { RunReport } from "../../faults/report.js";

const missing = missingServiceBinaries();
if (missing) console.warn(`skipping the fault suite's small variant: ${missing}`);

const TASKS = 60;

describe.skipIf(missing !== undefined)("fault suite, small and without faults", () => {
  it(`2 coordinator processes complete ${TASKS} fan-out/fan-in tasks with nothing doubled`, async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "faults/run.ts", "--no-faults", "--tasks", String(TASKS), "--coordinators", "2", "--work-ms", "5-40", "--json", "--max-minutes", "10"], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    // The suite bounds itself (--max-minutes, and "stuck" = nothing moved for 45 s); this only waits for it.
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    const context = `exit ${code}\n--- stdout ---\n${stdout.slice(-4000)}\n--- progress ---\n${stderr.slice(-3000)}`;
    const json = stdout.trim().split("\n").at(-1) ?? "";
    let report: RunReport;
    try {
      report = JSON.parse(json) as RunReport;
    } catch {
      throw new Error(`the suite printed no JSON report\n${context}`);
    }
    expect(report.tasks.completed, context).toBe(TASKS);
    expect(report.tasks.stuck, context).toEqual([]);
    expect(report.doubled, context).toEqual([]);
    expect(report.unexpectedExits, context).toEqual([]);
    expect(report.chains.every((c) => c.ok), context).toBe(true);
    expect(code, context).toBe(0);
  }, 15 * 60_000);
});
