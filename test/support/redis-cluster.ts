/**
 * A local 3-master Redis Cluster for a test run, through scripts/redis-cluster.sh (the script CI and people use).
 * Ports are picked free for each run, and each run's nodes live in a directory named after the runner's pid, so
 * concurrent runs on one machine never share or stop each other's cluster; nodes left by a killed run are stopped
 * by the next one.
 */
import { execFile, spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { processAlive, REPO_ROOT } from "./processes.js";

const run = promisify(execFile);
const SCRIPT = join(REPO_ROOT, "scripts/redis-cluster.sh");
const NODES = 3;
/** Redis listens for cluster traffic on the client port + 10000. */
const BUS_PORT_OFFSET = 10_000;
const DIR_RE = /^sy-redis-cluster-(\d+)-(\d+)$/;

export interface LocalCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` */
  url: string;
  stop(): Promise<void>;
}

/** Whether this machine can run a local cluster (the Debian `redis-server` and `redis-cli` on PATH). */
export function clusterToolsAvailable(): boolean {
  return ["redis-server", "redis-cli"].every((tool) => spawnSync(tool, ["--version"], { stdio: "ignore" }).status === 0);
}

export async function startLocalCluster(): Promise<LocalCluster> {
  await stopLeftovers();
  const basePort = await freeBasePort();
  const dir = join(tmpdir(), `sy-redis-cluster-${process.pid}-${basePort}`);
  const env = { ...process.env, REDIS_CLUSTER_DIR: dir };
  const script = (command: string): Promise<{ stdout: string }> => run(SCRIPT, [command, String(basePort)], { env, timeout: 60_000 });
  let url: string;
  try {
    url = (await script("start")).stdout.trim().split("\n").pop()!;
  } catch (error) {
    await script("stop").catch(() => {});
    throw error;
  }
  return { url, stop: async () => void (await script("stop")) };
}

/** Clusters of runs whose process is gone (killed before their teardown). */
async function stopLeftovers(): Promise<void> {
  for (const name of readdirSync(tmpdir())) {
    const match = DIR_RE.exec(name);
    if (!match || processAlive(Number(match[1]))) continue;
    await run(SCRIPT, ["stop", match[2]!], { env: { ...process.env, REDIS_CLUSTER_DIR: join(tmpdir(), name) }, timeout: 30_000 }).catch(() => {});
  }
}

/** A port p with p..p+2 and their cluster bus ports free on loopback. */
async function freeBasePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 9_000);
    const ports = Array.from({ length: NODES }, (_, i) => base + i).flatMap((port) => [port, port + BUS_PORT_OFFSET]);
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base;
  }
  throw new Error("no free ports for a local Redis Cluster");
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}
