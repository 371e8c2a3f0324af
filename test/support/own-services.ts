/**
 * A PostgreSQL cluster and a redis-server of a test's own, on ports of its own, for fault tests that stop, restart
 * and kill them. The shared services (5432, 6379) are never touched. Needs the Debian PostgreSQL wrappers
 * (pg_createcluster, pg_ctlcluster, pg_dropcluster) and redis-server; `missingServiceBinaries()` names what is
 * absent so a test can skip with that reason.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { createServer } from "node:net";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { processAlive as alive } from "./processes.js";

const run = promisify(execFile);

const PG_VERSION = "15";
const BINARIES = ["pg_createcluster", "pg_ctlcluster", "pg_dropcluster", "pg_lsclusters", "redis-server"] as const;

function onPath(binary: string): boolean {
  return (process.env.PATH ?? "").split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, binary), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Why the own services cannot run here (a missing binary or PostgreSQL version), or undefined when they can. */
export function missingServiceBinaries(): string | undefined {
  const missing = BINARIES.filter((b) => !onPath(b));
  if (missing.length > 0) return `not installed: ${missing.join(", ")}`;
  try {
    accessSync(`/usr/lib/postgresql/${PG_VERSION}/bin/postgres`, constants.X_OK);
  } catch {
    return `PostgreSQL ${PG_VERSION} server binaries are not installed`;
  }
  return undefined;
}

/** The first port of `ports` nothing listens on (several runs on one machine each get their own). */
async function freePort(ports: readonly number[]): Promise<number> {
  for (const port of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error(`every port of ${ports.join(", ")} is in use`);
}

export interface OwnPostgres {
  port: number;
  cluster: string;
  /** A connection URL for database `name` (trust auth, user postgres). */
  url(name: string): string;
  start(): Promise<void>;
  stop(mode: "fast" | "immediate"): Promise<void>;
  restart(mode: "fast" | "immediate"): Promise<void>;
  /** Stops and deletes the cluster. Idempotent; never throws. */
  drop(): Promise<void>;
}

/** Creates and starts a throw-away cluster (fsync off: only a machine crash could lose what it wrote). */
export async function startOwnPostgres(ports: readonly number[]): Promise<OwnPostgres> {
  await dropLeftoverClusters(ports);
  const port = await freePort(ports);
  const cluster = `sy_fault_${port}_${process.pid}`;
  await run("pg_createcluster", [
    PG_VERSION, cluster, "--port", String(port), "--start-conf", "manual",
    "-o", "fsync=off", "-o", "full_page_writes=off", "-o", "shared_buffers=16MB", "-o", "max_connections=100",
    "--", "--auth=trust", "--no-sync",
  ]);
  const ctl = async (...args: string[]) => {
    await run("pg_ctlcluster", [PG_VERSION, cluster, ...args]);
  };
  let dropped = false;
  const own: OwnPostgres = {
    port,
    cluster,
    url: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    start: () => ctl("start"),
    stop: (mode) => ctl("stop", "-m", mode),
    restart: (mode) => ctl("restart", "-m", mode),
    async drop() {
      if (dropped) return;
      dropped = true;
      await run("pg_dropcluster", [PG_VERSION, cluster, "--stop"]).catch(() => {});
    },
  };
  try {
    await own.start();
  } catch (error) {
    await own.drop();
    throw error;
  }
  return own;
}

/** Clusters of earlier runs on these ports whose test process is gone (a run killed before its afterAll). */
async function dropLeftoverClusters(ports: readonly number[]): Promise<void> {
  const { stdout } = await run("pg_lsclusters", ["--no-header"]);
  for (const line of stdout.split("\n")) {
    const [version, name, port] = line.trim().split(/\s+/);
    const match = /^sy_fault_(\d+)_(\d+)$/.exec(name ?? "");
    if (version !== PG_VERSION || !match || !ports.includes(Number(port)) || alive(Number(match[2]))) continue;
    await run("pg_dropcluster", [PG_VERSION, name!, "--stop"]).catch(() => {});
  }
}


export interface OwnRedis {
  port: number;
  url: string;
  /** Starts the server again on the same port (empty: it keeps nothing on disk). */
  start(): Promise<void>;
  /** Stops the server; everything it held is gone. */
  stop(): Promise<void>;
  /** Stops it for good. Idempotent; never throws. */
  close(): Promise<void>;
}

/** A redis-server that keeps nothing on disk (`--save "" --appendonly no`), so a restart loses every key. */
export async function startOwnRedis(ports: readonly number[]): Promise<OwnRedis> {
  const port = await freePort(ports);
  let child: ChildProcess | undefined;
  let closed = false;
  const start = async (): Promise<void> => {
    if (closed) throw new Error("this redis-server was closed");
    const proc = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    let output = "";
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("Ready to accept connections")) resolve();
      };
      proc.stdout!.on("data", onData);
      proc.stderr!.on("data", onData);
      proc.once("exit", (code) => reject(new Error(`redis-server on port ${port} exited with ${code}: ${output.slice(-500)}`)));
      proc.once("error", reject);
    });
    proc.stdout!.removeAllListeners("data");
    proc.stderr!.removeAllListeners("data");
    proc.stdout!.resume();
    proc.stderr!.resume();
  };
  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
    proc.kill("SIGTERM");
    await exited;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    async close() {
      closed = true;
      await stop().catch(() => {});
    },
  };
}
