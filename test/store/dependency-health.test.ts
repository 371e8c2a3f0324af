/**
 * The parts every process uses to survive its dependencies: the pool's clients keep an error listener while
 * checked out (a terminated backend used to be an uncaught 'error' event that killed the process), outages are
 * logged once and counted, errors are told apart (unreachable Postgres, unreachable Redis, anything else), and the
 * process guards carry on after a stray connection error but exit on a bug.
 */
import { EventEmitter } from "node:events";
import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DependencyHealth, outageBackoffMs, unreachableDependencyOf } from "../../src/process/dependency-health.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import { EXIT_SOFTWARE, installProcessGuards } from "../../src/process/process-guard.js";
import { readiness } from "../../src/process/readiness.js";
import { createPool, isDatabaseUnavailable } from "../../src/store/db.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

function capturingLogger(): { logger: ReturnType<typeof createLogger>; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger({ level: "debug", destination });
  return {
    logger,
    lines: () =>
      chunks
        .join("")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

async function metricValue(metrics: ReturnType<typeof createMetrics>, name: string, labels: Record<string, string>): Promise<number | undefined> {
  // A histogram's _count and _sum are values of the histogram, named by `metricName`.
  const values = (await metrics.registry.getMetricsAsJSON()).flatMap((m) => m.values.map((v) => ({ ...v, name: (v as { metricName?: string }).metricName ?? m.name })));
  return values.find((v) => v.name === name && Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;
}

describe("unreachableDependencyOf", () => {
  it("tells an unreachable Postgres, an unreachable Redis and everything else apart", () => {
    const pgCode = (code: string) => Object.assign(new Error("terminating connection due to administrator command"), { code });
    const socket = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    expect(unreachableDependencyOf(new Error("Connection terminated unexpectedly"))).toBe("postgres");
    expect(unreachableDependencyOf(pgCode("57P01"))).toBe("postgres");
    expect(unreachableDependencyOf(pgCode("57P03"))).toBe("postgres");
    // A bare socket error says nothing about whose socket it was (pg's own are recognised by where they were
    // raised: see the createPool tests below).
    expect(unreachableDependencyOf(socket)).toBeUndefined();
    expect(unreachableDependencyOf(new AggregateError([socket]))).toBeUndefined();
    expect(unreachableDependencyOf(new Error("handler failed", { cause: socket }))).toBeUndefined();
    const bus = (cause: unknown) => new SwitchyardError(ErrorCode.Unavailable, "bus read failed: …", { cause });
    expect(unreachableDependencyOf(bus(new Error("Connection is closed.")))).toBe("redis");
    expect(unreachableDependencyOf(bus(socket))).toBe("redis");
    expect(unreachableDependencyOf(Object.assign(new Error("Reached the max retries per request limit (which is 20)."), { name: "MaxRetriesPerRequestError" }))).toBe("redis");
    expect(unreachableDependencyOf(new Error("LOADING Redis is loading the dataset in memory"))).toBe("redis");
    // A command Redis refused is not an outage, nor is a query Postgres refused, nor a bug.
    expect(unreachableDependencyOf(bus(new Error("NOGROUP No such key or consumer group")))).toBeUndefined();
    expect(unreachableDependencyOf(pgCode("23505"))).toBeUndefined();
    // A SwitchyardError that is not UNAVAILABLE already says what went wrong; its cause is not looked into.
    expect(unreachableDependencyOf(new SwitchyardError(ErrorCode.FailedPrecondition, "foreign agent \"x\": …", { cause: new Error("Connection terminated unexpectedly") }))).toBeUndefined();
    expect(unreachableDependencyOf(new SwitchyardError(ErrorCode.Unavailable, "cannot read the schema version: …", { cause: new Error("Connection terminated unexpectedly") }))).toBe("postgres");
    expect(unreachableDependencyOf(new TypeError("cannot read properties of undefined"))).toBeUndefined();
    expect(unreachableDependencyOf(undefined)).toBeUndefined();
  });

  it("backs off exponentially up to a cap", () => {
    expect([1, 2, 3, 4, 5, 6, 50].map((n) => outageBackoffMs(n))).toEqual([200, 400, 800, 1600, 3200, 5000, 5000]);
  });
});

describe("DependencyHealth", () => {
  it("logs an outage once when it starts and once when it ends, and counts it", async () => {
    let now = 1_000;
    const { logger, lines } = capturingLogger();
    const metrics = createMetrics();
    const health = new DependencyHealth({ logger, metrics, clock: () => now });
    expect(await metricValue(metrics, "switchyard_dependency_up", { dependency: "postgres" })).toBe(1);
    for (let i = 0; i < 50; i++) health.unreachable("postgres", new Error("Connection terminated unexpectedly"));
    expect(health.absorb(new Error("Connection terminated unexpectedly"))).toBe(true);
    expect(health.absorb(new TypeError("a bug"))).toBe(false);
    expect(health.isReachable("postgres")).toBe(false);
    expect(health.outage("postgres")).toEqual({ sinceMs: 1_000, reason: "Connection terminated unexpectedly" });
    expect(await metricValue(metrics, "switchyard_dependency_up", { dependency: "postgres" })).toBe(0);
    now = 3_500;
    health.reachable("postgres");
    health.reachable("postgres");
    const warnings = lines().filter((l) => l.level === 40);
    expect(warnings.map((l) => l.msg)).toEqual([
      "postgres unreachable; retrying with backoff, not ready until it answers again",
      "postgres reachable again after 2500 ms",
    ]);
    expect(warnings[1]).toMatchObject({ dependency: "postgres", outageMs: 2500 });
    expect(await metricValue(metrics, "switchyard_dependency_outages_total", { dependency: "postgres" })).toBe(1);
    expect(await metricValue(metrics, "switchyard_dependency_outage_seconds_count", { dependency: "postgres" })).toBe(1);
    expect(await metricValue(metrics, "switchyard_dependency_outage_seconds_sum", { dependency: "postgres" })).toBe(2.5);
    expect(await metricValue(metrics, "switchyard_dependency_up", { dependency: "postgres" })).toBe(1);
    expect(await metricValue(metrics, "switchyard_dependency_outages_total", { dependency: "redis" })).toBeUndefined();
  });

  it("an answer to a call made before the outage began does not end it (a connect that straddles a fast restart)", () => {
    let now = 1_000;
    const { logger, lines } = capturingLogger();
    const health = new DependencyHealth({ logger, clock: () => now });
    const askedBefore = health.now();
    now = 1_200;
    health.unreachable("postgres", new Error("terminating connection due to administrator command"));
    now = 1_201;
    health.reachable("postgres", askedBefore);
    expect(health.isReachable("postgres")).toBe(false);
    const askedAfter = health.now();
    now = 2_400;
    health.reachable("postgres", askedAfter);
    expect(health.isReachable("postgres")).toBe(true);
    expect(lines().filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      "postgres unreachable; retrying with backoff, not ready until it answers again",
      "postgres reachable again after 1200 ms",
    ]);
  });
});

describe("createPool", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("survives a backend terminated under a checked-out client, reports the outage, and reconnects", async () => {
    const health = new DependencyHealth();
    const pool = createPool({ connectionString: db.url, max: 2, health });
    try {
      const client = await pool.connect();
      const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      // Another connection ends this client's backend while the client is checked out and idle: pg emits 'error'
      // on the client, which without a listener is an uncaught exception (vitest fails the run on it).
      await db.pool.query("SELECT pg_terminate_backend($1)", [rows[0]!.pid]);
      await expect.poll(() => health.isReachable("postgres")).toBe(false);
      await expect(client.query("SELECT 1")).rejects.toThrow();
      client.release(new Error("connection lost"));
      // The pool replaces the broken client; the new connection ends the outage.
      expect((await pool.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      expect(health.isReachable("postgres")).toBe(true);
    } finally {
      await pool.end();
    }
  });

  it("readiness reports an unreachable Postgres as not ready and records the outage", async () => {
    const health = new DependencyHealth();
    const pool = createPool({ connectionString: "postgres://postgres@127.0.0.1:1/nothing", max: 1, health });
    try {
      const report = await readiness({ pool, redis: { status: "reconnecting", ping: async () => "PONG" }, health, timeoutMs: 2_000 });
      expect(report.ready).toBe(false);
      expect(report.checks.redis).toBe("Redis is not connected (reconnecting)");
      expect(report.checks.postgres).toMatch(/ECONNREFUSED/);
      expect(report.outages?.postgres?.reason).toMatch(/ECONNREFUSED/);
    } finally {
      await pool.end();
    }
  });
});

describe("Postgres errors raised by createPool's pools", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("a connection refused, to an address or to a name of several addresses, is an unreachable Postgres", async () => {
    for (const host of ["127.0.0.1", "localhost"]) {
      const pool = createPool({ connectionString: `postgres://postgres@${host}:1/nothing`, max: 1 });
      try {
        const error = await pool.query("SELECT 1").then(() => undefined, (e: unknown) => e);
        expect(JSON.stringify([(error as { code?: unknown }).code, (error as { errors?: Array<{ code?: unknown }> }).errors?.map((e) => e.code)]), host).toMatch(/ECONNREFUSED/);
        expect(isDatabaseUnavailable(error), host).toBe(true);
        expect(unreachableDependencyOf(error), host).toBe("postgres");
      } finally {
        await pool.end();
      }
    }
  });

  it("a pool used after it was ended is an unreachable Postgres", async () => {
    const pool = createPool({ connectionString: db.url, max: 1 });
    await pool.query("SELECT 1");
    await pool.end();
    const error = await pool.query("SELECT 1").then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(unreachableDependencyOf(error)).toBe("postgres");
  });

  it("a connection reset under a running query (a bare ECONNRESET raised by pg) is an unreachable Postgres", async () => {
    // A loopback proxy in front of the test database that resets its client connections on demand: pg's socket
    // then fails with a real ECONNRESET, the same bare socket error a handler's own HTTP call could raise.
    const target = new URL(db.url);
    const clientSockets: Socket[] = [];
    const proxy = createServer((inbound) => {
      clientSockets.push(inbound);
      const outbound = connect(Number(target.port || 5432), target.hostname);
      inbound.pipe(outbound).pipe(inbound);
      inbound.on("error", () => outbound.destroy());
      outbound.on("error", () => inbound.destroy());
      inbound.on("close", () => outbound.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const proxied = new URL(db.url);
    proxied.hostname = "127.0.0.1";
    proxied.port = String((proxy.address() as AddressInfo).port);
    const health = new DependencyHealth();
    const pool = createPool({ connectionString: proxied.toString(), max: 1, health });
    try {
      await pool.query("SELECT 1");
      const running = pool.query("SELECT pg_sleep(30)").then(() => undefined, (e: unknown) => e);
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (const socket of clientSockets) socket.resetAndDestroy();
      const error = await running;
      expect((error as { code?: unknown }).code).toBe("ECONNRESET");
      expect(isDatabaseUnavailable(error)).toBe(true);
      expect(unreachableDependencyOf(error)).toBe("postgres");
      expect(health.isReachable("postgres")).toBe(false);
    } finally {
      await pool.end().catch(() => {});
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});

describe("installProcessGuards", () => {
  it("exits 70 on a bare socket error that is not Postgres's (a handler's HTTP call, stdout), and marks no outage", async () => {
    const target = new EventEmitter();
    const exits: number[] = [];
    const { logger, lines } = capturingLogger();
    const metrics = createMetrics();
    const health = new DependencyHealth({ logger, metrics });
    const remove = installProcessGuards({ logger, health, exit: (code) => exits.push(code), target: target as unknown as NodeJS.Process });
    try {
      target.emit("uncaughtException", Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", errno: -104, syscall: "read" }));
      target.emit("uncaughtException", Object.assign(new Error("write EPIPE"), { code: "EPIPE", errno: -32, syscall: "write" }));
      target.emit("unhandledRejection", new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED 10.1.2.3:443"), { code: "ECONNREFUSED" }) }));
      expect(exits).toEqual([EXIT_SOFTWARE, EXIT_SOFTWARE, EXIT_SOFTWARE]);
      expect(health.isReachable("postgres")).toBe(true);
      expect(await metricValue(metrics, "switchyard_dependency_up", { dependency: "postgres" })).toBe(1);
      expect(lines().filter((l) => l.level === 60).map((l) => (l.err as { message: string }).message)).toEqual(["read ECONNRESET", "write EPIPE", expect.stringMatching(/^fetch failed/)]);
    } finally {
      remove();
    }
  });

  it("carries on after a stray dependency error and exits 70 on anything else", () => {
    const target = new EventEmitter();
    const exits: number[] = [];
    const { logger, lines } = capturingLogger();
    const health = new DependencyHealth({ logger });
    const remove = installProcessGuards({ logger, health, exit: (code) => exits.push(code), target: target as unknown as NodeJS.Process });
    target.emit("uncaughtException", Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }));
    target.emit("unhandledRejection", new SwitchyardError(ErrorCode.Unavailable, "bus publish failed: Connection is closed.", { cause: new Error("Connection is closed.") }));
    expect(exits).toEqual([]);
    expect(health.isReachable("postgres")).toBe(false);
    expect(health.isReachable("redis")).toBe(false);
    target.emit("unhandledRejection", new TypeError("x is not a function"));
    expect(exits).toEqual([EXIT_SOFTWARE]);
    expect(lines().filter((l) => l.level === 60).map((l) => (l.err as { message: string }).message)).toEqual(["x is not a function"]);
    remove();
    expect(target.listenerCount("uncaughtException") + target.listenerCount("unhandledRejection")).toBe(0);
  });
});
