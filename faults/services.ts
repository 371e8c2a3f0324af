/**
 * The suite's own Redis and PostgreSQL, started from the installed binaries on ports of their own — never the
 * developer's services on 6379/5432 — plus the service faults: a Redis restart that loses every key, and
 * PostgreSQL restarts (`-m fast`, `-m immediate`, kill -9 of the postmaster). A state file in the run directory
 * names what was started, so a later run can clean up after a suite that was itself killed (`cleanupStale`).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { Redis } from "ioredis";
import { sleep } from "./random.js";
import { processAlive as alive } from "../test/support/processes.js";

const run = promisify(execFile);
const PG_VERSION = "15";
/** Where every run keeps its state file, handler module and execution records (one directory per suite pid). */
export const RUNS_ROOT = "/tmp/switchyard-faults";
const CLUSTER_RE = /^sy_faults_(\d+)$/;

export interface ServicesOptions {
  redisPort: number;
  pgPort: number;
  runDir: string;
  log: (line: string) => void;
}

export interface Services {
  redisUrl: string;
  /** A URL to database `name` on the suite's cluster, as superuser `postgres` (trust auth on loopback). */
  databaseUrl(name: string): string;
  cluster: string;
  restartRedisWithDataLoss(): Promise<void>;
  restartPostgres(mode: "fast" | "immediate"): Promise<void>;
  killPostgresAndStart(): Promise<void>;
  /** Stops Redis and drops the cluster; safe to call twice and after a partial start. */
  teardown(): Promise<void>;
}

interface RunState {
  redisPid?: number;
  cluster?: string;
  /** Switchyard child processes, so a later run can end them if this suite was killed. */
  children?: number[];
}

export function writeRunState(runDir: string, patch: RunState): void {
  const file = join(runDir, "state.json");
  const current: RunState = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as RunState) : {};
  writeFileSync(file, JSON.stringify({ ...current, ...patch }));
}


/** Ends a recorded process only if it still runs the program we started (a pid may have been reused). */
function killIfOurs(pid: number, program: RegExp): void {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
    if (program.test(cmdline)) process.kill(pid, "SIGKILL");
  } catch {
    // gone already
  }
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => (socket.destroy(), resolve(false)));
    socket.once("error", () => resolve(true));
  });
}

async function listClusters(): Promise<Array<{ name: string; port: number }>> {
  const { stdout } = await run("pg_lsclusters", ["--no-header"]);
  return stdout
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols[0] === PG_VERSION && cols[1])
    .map((cols) => ({ name: cols[1]!, port: Number(cols[2]) }));
}

async function dropCluster(name: string): Promise<void> {
  await run("pg_dropcluster", [PG_VERSION, name, "--stop"]).catch(async () => {
    // A postmaster killed with -9 can leave the stop step confused: end what is left, then drop again.
    const pidFile = `/var/lib/postgresql/${PG_VERSION}/${name}/postmaster.pid`;
    if (existsSync(pidFile)) killIfOurs(Number(readFileSync(pidFile, "utf8").split("\n")[0]), /postgres/);
    await sleep(500);
    await run("pg_dropcluster", [PG_VERSION, name]);
  });
}

/** Ends what suites that died without tearing down left behind: their Redis, processes and cluster. */
export async function cleanupStale(log: (line: string) => void): Promise<void> {
  if (existsSync(RUNS_ROOT)) {
    for (const entry of readdirSync(RUNS_ROOT)) {
      const owner = Number(entry);
      const file = join(RUNS_ROOT, entry, "state.json");
      if (!Number.isInteger(owner) || alive(owner) || !existsSync(file)) continue;
      const state = JSON.parse(readFileSync(file, "utf8")) as RunState;
      if (state.redisPid) killIfOurs(state.redisPid, /redis-server/);
      for (const pid of state.children ?? []) killIfOurs(pid, /cli\/main\.ts start (coordinator|harness|gateway)/);
      rmSync(file, { force: true });
      log(`cleaned up after dead suite ${owner}`);
    }
  }
  for (const { name } of await listClusters()) {
    const match = CLUSTER_RE.exec(name);
    if (match && !alive(Number(match[1]))) {
      log(`dropping cluster ${name} left by a dead suite`);
      await dropCluster(name);
    }
  }
}

async function waitForRedis(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    redis.on("error", () => {});
    try {
      await redis.connect();
      if ((await redis.ping()) === "PONG") return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`redis at ${url} did not answer within ${timeoutMs} ms: ${(error as Error).message}`);
    } finally {
      redis.disconnect();
    }
    await sleep(100);
  }
}

async function waitForPostgres(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("SELECT 1");
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`postgres at ${url} did not answer within ${timeoutMs} ms: ${(error as Error).message}`);
    } finally {
      await client.end().catch(() => {});
    }
    await sleep(200);
  }
}

export async function startServices(options: ServicesOptions): Promise<Services> {
  const { redisPort, pgPort, runDir, log } = options;
  for (const [what, port] of [["redis", redisPort], ["postgres", pgPort]] as const) {
    if (!(await portFree(port))) throw new Error(`port ${port} (for the suite's own ${what}) is in use; pick another with --${what === "redis" ? "redis" : "pg"}-port`);
  }
  const cluster = `sy_faults_${process.pid}`;
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const databaseUrl = (name: string) => `postgres://postgres@127.0.0.1:${pgPort}/${name}`;
  const redisDir = join(runDir, "redis");
  mkdirSync(redisDir, { recursive: true });
  let redis: ChildProcess | undefined;
  let clusterCreated = false;
  let tornDown = false;

  async function startRedis(): Promise<void> {
    // No persistence at all: a restart comes back empty, which is the fault being injected.
    redis = spawn("redis-server", ["--port", String(redisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction", "--dir", redisDir], {
      stdio: "ignore",
      detached: true, // its own process group: a Ctrl-C reaches the suite, which tears down in order
    });
    writeRunState(runDir, { redisPid: redis.pid! });
    await waitForRedis(redisUrl);
  }

  async function stopRedis(): Promise<void> {
    const child = redis;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }

  const ctl = (action: string, ...extra: string[]) => run("pg_ctlcluster", ["--skip-systemctl-redirect", PG_VERSION, cluster, action, ...extra]);

  /** Starts the cluster, retrying while the processes of a killed postmaster still hold its lock files. */
  async function startPostgres(): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await ctl("start");
        break;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`cannot start cluster ${cluster}: ${(error as Error).message}`);
        await sleep(500);
      }
    }
    await waitForPostgres(databaseUrl("postgres"));
  }

  const services: Services = {
    redisUrl,
    databaseUrl,
    cluster,
    async restartRedisWithDataLoss() {
      await stopRedis();
      await startRedis();
    },
    async restartPostgres(mode) {
      await ctl("restart", "-m", mode);
      await waitForPostgres(databaseUrl("postgres"));
    },
    async killPostgresAndStart() {
      const pidFile = `/var/lib/postgresql/${PG_VERSION}/${cluster}/postmaster.pid`;
      const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
      process.kill(pid, "SIGKILL");
      // The backends notice their postmaster is gone and exit; until then a new postmaster refuses to start.
      const deadline = Date.now() + 30_000;
      while (alive(pid) && Date.now() < deadline) await sleep(100);
      await startPostgres();
    },
    async teardown() {
      if (tornDown) return;
      tornDown = true;
      await stopRedis().catch(() => {});
      if (clusterCreated) await dropCluster(cluster).catch((error) => log(`could not drop cluster ${cluster}: ${(error as Error).message}`));
      // Nothing is left to clean up: a later run must not act on this file.
      rmSync(join(runDir, "state.json"), { force: true });
    },
  };

  try {
    await startRedis();
    log(`redis ${redisUrl} (no persistence)`);
    writeRunState(runDir, { cluster });
    clusterCreated = true;
    await run("pg_createcluster", [PG_VERSION, cluster, "--port", String(pgPort), "--start-conf", "manual", "-o", "max_connections=300", "--", "--auth=trust"]);
    await startPostgres();
    log(`postgres cluster ${cluster} on 127.0.0.1:${pgPort} (trust)`);
  } catch (error) {
    await services.teardown();
    throw error;
  }
  return services;
}
