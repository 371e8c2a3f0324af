/**
 * Runs `switchyard` CLI commands as real child processes (through tsx), for crash and CLI tests.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CLI = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

export interface ManagedProcess {
  name: string;
  child: ChildProcess;
  /** Last lines of combined output, for failure messages. */
  output(): string;
  /** Resolves with the exit code (or signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * `detached`: the child gets a process group of its own, so a Ctrl-C at the terminal reaches only the parent,
 * which then stops its children in order (the fault suite).
 */
export function spawnCli(name: string, args: string[], env: Record<string, string>, options: { detached?: boolean } = {}): ManagedProcess {
  const child = spawn(process.execPath, ["--import", "tsx", CLI, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached ?? false,
  });
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    if (lines.length > 200) lines.splice(0, lines.length - 200);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { name, child, output: () => lines.join("\n"), exited };
}

export async function kill(proc: ManagedProcess, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill(signal);
  await proc.exited;
}

/** Runs one short CLI command to its end and returns its exit code and its stdout and stderr, separately. */
export async function runCliCommand(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", CLI, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  return { code, stdout, stderr };
}

/** Whether a process with this pid exists (EPERM: it does, but belongs to someone else). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
