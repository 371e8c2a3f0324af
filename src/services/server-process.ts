/**
 * What the embedded PostgreSQL and the redis-server adapters share: a free port, a server process in a process
 * group of its own with its output in a log file, a readiness wait that tells "exited" from "slow", and a stop
 * that is graceful first and forced after a grace period, never leaving a process behind.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { ErrorCode, SwitchyardError } from "../errors.js";

/** `port` when nothing listens on it, else any free port the OS hands out. */
export async function freePort(preferred: number): Promise<number> {
  const listen = (port: number) =>
    new Promise<number | undefined>((resolve) => {
      const server = createServer();
      server.once("error", () => resolve(undefined));
      server.listen(port, "127.0.0.1", () => {
        const address = server.address();
        const bound = typeof address === "object" && address ? address.port : undefined;
        server.close(() => resolve(bound));
      });
    });
  const port = (await listen(preferred)) ?? (await listen(0));
  if (port === undefined) throw new SwitchyardError(ErrorCode.Unavailable, "no free TCP port on 127.0.0.1");
  return port;
}

export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user (a server running as `nobody`).
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The last `chars` characters of a log file, for error messages ("" when it cannot be read). */
export function logTail(path: string, chars = 1_500): string {
  try {
    const text = readFileSync(path, "utf8");
    return text.slice(-chars).trim();
  } catch {
    return "";
  }
}

export interface ServerSpawnOptions {
  command: string;
  args: string[];
  /** stdout and stderr are appended here. */
  logFile: string;
  env?: NodeJS.ProcessEnv;
  /** Run as this user (PostgreSQL refuses root). */
  user?: { uid: number; gid: number };
}

/**
 * Spawns a server in a process group of its own: a Ctrl-C at the terminal reaches only Switchyard, which stops
 * its processes first and its servers last (a server stopping first would fail their last writes).
 */
export function spawnServer(options: ServerSpawnOptions): ChildProcess {
  const log = openSync(options.logFile, "a");
  try {
    return spawn(options.command, options.args, {
      stdio: ["ignore", log, log],
      detached: true,
      env: options.env ?? process.env,
      ...(options.user ? { uid: options.user.uid, gid: options.user.gid } : {}),
    });
  } finally {
    // The child has its own copy of the descriptor.
    closeSync(log);
  }
}

/** Resolves once `child` has exited (at once when it already has). */
export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

export interface ReadyWaitOptions {
  /** Resolves true once the server serves requests. */
  check(): Promise<boolean>;
  child: ChildProcess;
  what: string;
  logFile: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Polls `check` until it passes; fails at once when the process exits, naming its log. */
export async function waitUntilReady(options: ReadyWaitOptions): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let spawnError: Error | undefined;
  options.child.once("error", (error) => (spawnError = error));
  for (;;) {
    if (spawnError) {
      throw new SwitchyardError(ErrorCode.Unavailable, `${options.what} could not be started: ${spawnError.message}`, { cause: spawnError });
    }
    if (options.child.exitCode !== null || options.child.signalCode !== null) {
      const tail = logTail(options.logFile);
      throw new SwitchyardError(
        ErrorCode.Unavailable,
        `${options.what} exited at start-up (${options.child.exitCode ?? options.child.signalCode}); see ${options.logFile}${tail ? `:\n${tail}` : ""}`,
      );
    }
    if (options.signal?.aborted) throw new SwitchyardError(ErrorCode.Cancelled, `cancelled while ${options.what} was starting`);
    if (await options.check().catch(() => false)) return;
    if (Date.now() > deadline) {
      throw new SwitchyardError(ErrorCode.Timeout, `${options.what} did not accept connections within ${options.timeoutMs} ms; see ${options.logFile}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface StopOptions {
  /** The signal asking for a clean shutdown. */
  graceful: NodeJS.Signals;
  /** How long a clean shutdown may take before SIGKILL. */
  graceMs: number;
}

/** Stops a process by pid (one this process did not spawn: adopted from an earlier run). */
export async function stopPid(pid: number, options: StopOptions): Promise<void> {
  const send = (signal: NodeJS.Signals) => {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  };
  send(options.graceful);
  const deadline = Date.now() + options.graceMs;
  while (processAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  if (processAlive(pid)) {
    send("SIGKILL");
    const hardDeadline = Date.now() + 5_000;
    while (processAlive(pid) && Date.now() < hardDeadline) await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Stops a spawned server: `graceful`, then SIGKILL after `graceMs`; resolves once it has exited. */
export async function stopChild(child: ChildProcess, options: StopOptions): Promise<void> {
  const gone = exited(child);
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(options.graceful);
  let timer: NodeJS.Timeout | undefined;
  const forced = new Promise<"forced">((resolve) => (timer = setTimeout(() => resolve("forced"), options.graceMs)));
  const outcome = await Promise.race([gone.then(() => "clean" as const), forced]);
  clearTimeout(timer);
  if (outcome === "forced") {
    child.kill("SIGKILL");
    await gone;
  }
}

/**
 * Asks `pid` to stop when this process exits without having stopped it (a second Ctrl-C exits at once): the
 * server then shuts down by itself rather than outliving us. Returns the function that removes the hook.
 */
export function stopOnExit(pid: number, signal: NodeJS.Signals): () => void {
  const hook = () => {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  };
  process.once("exit", hook);
  return () => process.off("exit", hook);
}
