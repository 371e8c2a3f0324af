/**
 * The embedded PostgreSQL and the redis-server adapters with real processes, on scratch folders and ports of their
 * own (never the shared 5432/6379): they serve, a second start shares a running server, stop leaves no process
 * behind, and the data folder can be started again with its data. One instance of each per file (initdb takes
 * seconds).
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres } from "../../src/services/embedded-postgres.js";
import type { LocalService } from "../../src/services/local-service.js";
import { HOW_TO_GET_REDIS, pings, startRedisServer } from "../../src/services/redis-server.js";
import { freePort, processAlive } from "../../src/services/server-process.js";
import { processesMentioning, scratchDir } from "./scratch.js";

const dir = scratchDir("adapters");
let postgres: LocalService;
let redis: LocalService;

async function query(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

function postgresUrl(service: LocalService): string {
  return service.url.replace(/\/[^/]*$/, "/postgres");
}

beforeAll(async () => {
  [postgres, redis] = await Promise.all([
    startEmbeddedPostgres({ dataDir: dir.path, database: "postgres", port: await freePort(0), durability: "scratch" }),
    startRedisServer({ dataDir: dir.path, port: await freePort(0) }),
  ]);
});

afterAll(async () => {
  await Promise.all([postgres?.stop(), redis?.stop()]);
  dir.remove();
});

describe("embedded PostgreSQL", () => {
  it("serves queries on its own port with a generated password, and says where its data is", async () => {
    const url = new URL(postgres.url);
    expect(url.hostname).toBe("127.0.0.1");
    expect(url.port).not.toBe("5432");
    expect(url.password.length).toBeGreaterThan(10);
    expect(postgres.owned).toBe(true);
    expect(postgres.description).toMatch(new RegExp(`^embedded 15\\.\\d+ on 127\\.0\\.0\\.1:${url.port} \\(data in .*/pg\\)$`));
    const version = await query(postgresUrl(postgres), "SHOW server_version");
    expect(version.rows[0].server_version).toMatch(/^15\./);
    await query(postgresUrl(postgres), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')");
  });

  it("refuses a wrong password (the cluster is not open to anyone on the machine)", async () => {
    const url = new URL(postgresUrl(postgres));
    url.password = "wrong";
    await expect(query(url.toString(), "SELECT 1")).rejects.toThrow(/password authentication failed/);
  });

  it("a second start on the same folder shares the running server instead of starting another", async () => {
    const again = await startEmbeddedPostgres({ dataDir: dir.path, database: "postgres" });
    expect(again.url).toBe(postgres.url);
    expect(again.description).toMatch(/already running/);
    // Its starter is alive (this process, through the first handle), so this handle does not own it: stopping it
    // leaves the server to the first.
    expect(again.owned).toBe(false);
    await again.stop();
    expect((await query(postgresUrl(postgres), "SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
  });
});

describe("redis-server", () => {
  it("answers PING on its own port and keeps nothing on disk", async () => {
    const port = Number(new URL(redis.url).port);
    expect(port).not.toBe(6379);
    expect(await pings(port)).toBe(true);
    expect(redis.description).toMatch(/^redis-server \d+\.\d+\.\d+ on 127\.0\.0\.1:\d+ \(no persistence; log in .*\/redis\)$/);
  });

  it("without a redis-server binary says in one line how to get Redis, naming REDIS_URL", async () => {
    const error = await startRedisServer({ dataDir: dir.path, searchPath: "/nonexistent" }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "UNAVAILABLE", message: HOW_TO_GET_REDIS, details: { variable: "REDIS_URL" } });
    expect(HOW_TO_GET_REDIS).not.toContain("\n");
    expect(HOW_TO_GET_REDIS).toMatch(/apt-get install redis-server/);
  });
});

describe("stop", () => {
  it("leaves no process behind, and the folder starts again with its data", async () => {
    const pgPid = Number((await query(postgresUrl(postgres), "SELECT pg_backend_pid() AS pid")).rows[0].pid);
    await Promise.all([postgres.stop(), redis.stop()]);
    await postgres.stop(); // idempotent
    expect(processAlive(pgPid)).toBe(false);
    expect(processesMentioning(dir.path)).toEqual([]);
    expect(await pings(Number(new URL(redis.url).port))).toBe(false);

    postgres = await startEmbeddedPostgres({ dataDir: dir.path, database: "postgres", port: await freePort(0), durability: "scratch" });
    expect(postgres.description).not.toMatch(/already running/);
    const kept = await query(postgresUrl(postgres), "SELECT v FROM kept");
    expect(kept.rows).toEqual([{ v: "still here" }]);
    redis = await startRedisServer({ dataDir: dir.path, port: await freePort(0) });
    expect(await pings(Number(new URL(redis.url).port))).toBe(true);
  });
});

describe("a server left running by a Switchyard process that is gone", () => {
  it("is taken over by the next start and stopped by it", async () => {
    const own = scratchDir("adopt");
    try {
      const first = await startRedisServer({ dataDir: own.path, port: await freePort(0) });
      const record = join(own.path, "redis", "server.json");
      // Its starter "died": a pid that has exited.
      const dead = spawnSync("true").pid;
      writeFileSync(record, JSON.stringify({ ...JSON.parse(readFileSync(record, "utf8")), owner: dead }));
      const next = await startRedisServer({ dataDir: own.path });
      expect(next.url).toBe(first.url);
      expect(next.owned).toBe(true);
      expect(JSON.parse(readFileSync(record, "utf8")).owner).toBe(process.pid);
      await next.stop();
      expect(await pings(Number(new URL(next.url).port))).toBe(false);
      expect(processesMentioning(own.path)).toEqual([]);
      await first.stop();
    } finally {
      own.remove();
    }
  });
});
