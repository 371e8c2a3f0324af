/**
 * The demos as a newcomer runs them: a separate process through bin/switchyard.js (as `npx switchyard demo` would),
 * which must end by itself — a process still running after `killAfterMs` is killed and reported with its signal.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";

const BIN = fileURLToPath(new URL("../../bin/switchyard.js", import.meta.url));

export interface DemoProcessResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export function runDemoProcess(args: string[], env: Record<string, string>, killAfterMs: number): Promise<DemoProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    // A process that does not end by itself is a failure, not a hang of the test run.
    const timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** The hop table's rows (trimmed), below its header. */
export function hopRows(out: string): string[] {
  const lines = out.split("\n");
  const header = lines.findIndex((l) => /^\s+SEQ\s+STEP\s+ACTION\s+ACTOR\s+DESTINATION\s+VERDICT\s+RULE\s+COST\s+\+MS$/.test(l));
  expect(header, out).toBeGreaterThan(0);
  const rows: string[] = [];
  for (let i = header + 1; i < lines.length && /^\s+\d+\s/.test(lines[i]!); i++) rows.push(lines[i]!.trim());
  return rows;
}
