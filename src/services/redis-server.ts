/**
 * The adapter that runs the `redis-server` installed on this machine, on a free port, keeping nothing on disk
 * (`--save "" --appendonly no`): the bus's streams live as long as the server, which is what a demo or a dev stack
 * needs. Its folder `<dataDir>/redis/` holds its log and `server.json` (pid, port, the Switchyard process that
 * started it), so a second Switchyard process shares a running server instead of starting another.
 */
import { execFile } from "node:child_process";
import { accessSync, constants, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { delimiter, join, resolve } from "node:path";
import { promisify } from "node:util";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { LocalService } from "./local-service.js";
import { exited, freePort, processAlive, spawnServer, stopChild, stopOnExit, stopPid, waitUntilReady } from "./server-process.js";

const run = promisify(execFile);

/** Tried first, so the URL stays the same from run to run. */
export const REDIS_SERVER_PORT = 63799;

/** The one line for a machine with neither a Redis answering nor redis-server installed. */
export const HOW_TO_GET_REDIS =
  "Redis: nothing answers on 127.0.0.1:6379 and redis-server is not installed. Install it (apt-get install redis-server | " +
  "brew install redis) or run one (docker run -d -p 6379:6379 redis:7), or set REDIS_URL";

export interface RedisServerOptions {
  /** The services folder (absolute); the server's own folder is `<dataDir>/redis`. */
  dataDir: string;
  /** @defaultValue REDIS_SERVER_PORT when free, else any free port */
  port?: number;
  /** The binary. @defaultValue the `redis-server` found on `searchPath` */
  binary?: string;
  /** Where to look for `redis-server` (PATH syntax). @defaultValue process.env.PATH */
  searchPath?: string;
  /** @defaultValue 5 000 */
  stopGraceMs?: number;
  /** @defaultValue 30 000 */
  startTimeoutMs?: number;
  /** How the data folder is named in the description. @defaultValue dataDir */
  displayDir?: string;
  signal?: AbortSignal;
}

/** The `redis-server` on PATH, or undefined. */
export function findRedisServer(path = process.env.PATH ?? ""): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, "redis-server");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** Sends PING over a raw connection: true on +PONG. */
export function pings(port: number, host = "127.0.0.1", timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let reply = "";
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      reply += chunk.toString();
      if (reply.includes("\r\n")) done(reply.startsWith("+PONG"));
    });
    socket.once("error", () => done(false));
  });
}

interface ServerRecord {
  pid: number;
  port: number;
  owner: number;
}

function readRecord(file: string): ServerRecord | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as ServerRecord;
  } catch {
    return undefined;
  }
}

export async function startRedisServer(options: RedisServerOptions): Promise<LocalService> {
  const binary = options.binary ?? findRedisServer(options.searchPath);
  if (!binary) throw new SwitchyardError(ErrorCode.Unavailable, HOW_TO_GET_REDIS, { details: { variable: "REDIS_URL" } });
  const dir = join(resolve(options.dataDir), "redis");
  const shown = join(options.displayDir ?? options.dataDir, "redis");
  const recordFile = join(dir, "server.json");
  const logFile = join(dir, "redis.log");
  mkdirSync(dir, { recursive: true });
  const { stdout } = await run(binary, ["--version"]);
  const version = /v=(\S+)/.exec(stdout)?.[1] ?? "?";
  const stopGraceMs = options.stopGraceMs ?? 5_000;

  const earlier = readRecord(recordFile);
  if (earlier && processAlive(earlier.pid) && (await pings(earlier.port))) {
    const adopted = !processAlive(earlier.owner);
    if (adopted) writeFileSync(recordFile, JSON.stringify({ ...earlier, owner: process.pid }));
    const removeHook = adopted ? stopOnExit(earlier.pid, "SIGTERM") : () => {};
    let stopped = false;
    return {
      service: "Redis",
      url: `redis://127.0.0.1:${earlier.port}`,
      description: `redis-server ${version} on 127.0.0.1:${earlier.port} (no persistence; log in ${shown}; already running${adopted ? "" : `, started by pid ${earlier.owner}`})`,
      embedded: true,
      owned: adopted,
      async stop() {
        if (!adopted || stopped) return;
        stopped = true;
        await stopPid(earlier.pid, { graceful: "SIGTERM", graceMs: stopGraceMs });
        removeHook();
      },
    };
  }

  const port = options.port ?? (await freePort(REDIS_SERVER_PORT));
  const child = spawnServer({
    command: binary,
    args: [
      "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
      "--daemonize", "no", "--maxmemory-policy", "noeviction",
    ],
    logFile,
  });
  const removeHook = child.pid !== undefined ? stopOnExit(child.pid, "SIGTERM") : () => {};
  try {
    await waitUntilReady({ child, what: `redis-server (port ${port})`, logFile, timeoutMs: options.startTimeoutMs ?? 30_000, check: () => pings(port), ...(options.signal ? { signal: options.signal } : {}) });
  } catch (error) {
    await stopChild(child, { graceful: "SIGTERM", graceMs: 2_000 });
    removeHook();
    throw error;
  }
  writeFileSync(recordFile, JSON.stringify({ pid: child.pid ?? 0, port, owner: process.pid } satisfies ServerRecord));
  let stopping: Promise<void> | undefined;
  return {
    service: "Redis",
    url: `redis://127.0.0.1:${port}`,
    description: `redis-server ${version} on 127.0.0.1:${port} (no persistence; log in ${shown})`,
    embedded: true,
    owned: true,
    stop() {
      stopping ??= (async () => {
        await stopChild(child, { graceful: "SIGTERM", graceMs: stopGraceMs }).catch(() => {});
        await exited(child);
        removeHook();
      })();
      return stopping;
    },
  };
}
