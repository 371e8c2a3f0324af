/**
 * The demos as a newcomer runs them: a separate process through bin/switchyard.js (as `npx switchyard demo` would),
 * which must end by itself — a process still running after `killAfterMs` is killed and reported with its signal.
 */
import { spawn, type ChildProcess } from "node:child_process";
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

export interface SpawnedDemo {
  process: ChildProcess;
  /** Everything printed so far (stdout, then stderr). */
  output(): string;
  /** Resolves with stdout once it matches; fails when the process ends first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<string>;
  exited(timeoutMs: number): Promise<{ code: number | null; signal: string | null }>;
}

/** A demo process left running (`--keep-running`), to be talked to while it runs and stopped by the test. */
export function spawnDemo(args: string[], env: Record<string, string>): SpawnedDemo {
  const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const closed = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
  const within = <T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what} within ${timeoutMs} ms; output:\n${stdout}\n${stderr}`)), timeoutMs);
      promise.then(resolve, reject).finally(() => clearTimeout(timer));
    });
  return {
    process: child,
    output: () => `stdout:\n${stdout}\nstderr:\n${stderr}`,
    waitFor(pattern, timeoutMs) {
      return within(
        new Promise<string>((resolve, reject) => {
          const check = () => {
            if (pattern.test(stdout)) resolve(stdout);
          };
          child.stdout.on("data", check);
          check();
          void closed.then(() => reject(new Error(`the demo ended before printing ${pattern}:\n${stdout}\n${stderr}`)));
        }),
        timeoutMs,
        `no ${pattern}`,
      );
    },
    exited: (timeoutMs) => within(closed, timeoutMs, "the demo did not exit"),
  };
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
