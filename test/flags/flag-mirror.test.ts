/**
 * The flag mirror (issue 27 §3): coordinators copy table `flags` into one Redis key on every read, and a harness's
 * MirroredFlags follows that key with no database at all. Real Redis and Postgres; one database per file, one key
 * prefix per test.
 */
import { readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { defaultConfig, type FlagsConfig } from "../../src/config/index.js";
import { encodeFlagMirror, FlagMirror, flagMirrorKey, parseFlagMirror } from "../../src/flags/flag-mirror.js";
import { setFlag } from "../../src/flags/flag-changes.js";
import { createPostgresFlagStore } from "../../src/store/flags/postgres-flag-store.js";
import type { FlagRow } from "../../src/flags/flag-types.js";
import { LiveFlags } from "../../src/flags/live-flags.js";
import { MirroredFlags } from "../../src/flags/mirrored-flags.js";
import { createLogger, type Logger } from "../../src/logger.js";
import { DependencyHealth } from "../../src/process/dependency-health.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { createTestRedis, type TestRedis } from "../support/redis.js";
import { within } from "./support.js";

const DEFAULTS: FlagsConfig = { ...defaultConfig.flags, busEnabled: true, harnessEnabled: true, harnessScopes: "*", busRouted: "*", pollMs: 50 };

/** A debug logger whose lines the test can read. */
function capturedLogger(): { logger: Logger; messages: () => string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const logger = createLogger({ level: "debug", destination });
  return { logger, messages: () => lines.map((line) => (JSON.parse(line) as { msg: string }).msg) };
}

function row(overrides: Partial<FlagRow>): FlagRow {
  return { name: "HARNESS_ENABLED", scopeKind: "role", scope: "x", enabled: false, updatedBy: "test", reason: "test", updatedAt: new Date(0).toISOString(), ...overrides };
}

describe("the flag mirror", () => {
  let db: TestDatabase;
  let t: TestRedis;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });
  beforeEach(async () => {
    t = await createTestRedis();
    await db.pool.query("DELETE FROM flags");
  });
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
    await t.cleanup();
  });

  function coordinator(): { flags: LiveFlags; mirror: FlagMirror } {
    const flags = new LiveFlags({ db: db.pool, store: createPostgresFlagStore(), defaults: DEFAULTS, pollMs: 50 });
    const mirror = new FlagMirror({ flags, redis: t.redis, keyPrefix: t.prefix });
    stops.push(() => flags.stop(), () => mirror.stop());
    return { flags, mirror };
  }

  function harness(defaults: FlagsConfig = DEFAULTS, logger?: Logger): MirroredFlags {
    const flags = new MirroredFlags({ redis: t.redis, keyPrefix: t.prefix, defaults, pollMs: 50, ...(logger ? { logger } : {}) });
    stops.push(() => flags.stop());
    return flags;
  }

  it("carries a flag set in table flags to a harness, and back", async () => {
    const key = flagMirrorKey(t.prefix);
    expect(key).toBe(`${t.prefix}flags:mirror`);
    const { flags, mirror } = coordinator();
    // Before its first read a coordinator must not write its empty snapshot over what others mirrored.
    mirror.start();
    await mirror.flush();
    expect(await t.redis.exists(key)).toBe(0);

    await flags.refresh();
    await mirror.flush();
    expect(parseFlagMirror((await t.redis.get(key))!)).toEqual({ v: 1, atMs: expect.any(Number), rows: [] });
    const worker = harness();
    await worker.refresh();
    expect(worker.harnessEnabled("role", "x")).toBe(true);

    let heard = 0;
    worker.subscribe(() => (heard += 1));
    flags.start();
    worker.start();
    await setFlag(createPostgresFlagStore(), db.pool, { name: "HARNESS_ENABLED", scopeKind: "role", scope: "x", enabled: false, actor: "test:sre", reason: "drain x" });
    await within(5_000, () => !worker.harnessEnabled("role", "x"), "the harness to see HARNESS_ENABLED off for role:x");
    expect(worker.harnessEnabled("role", "y")).toBe(true);
    expect(worker.busEnabled()).toBe(true);
    expect(heard).toBe(1);
    expect(worker.mirroredAtMs).toBeGreaterThan(Date.now() - 60_000);

    // Exactly the table's rows (no defaults), and no TTL.
    const stored = JSON.parse((await t.redis.get(key))!) as { v: number; atMs: number; rows: FlagRow[] };
    expect(stored.v).toBe(1);
    expect(stored.rows).toEqual([expect.objectContaining({ name: "HARNESS_ENABLED", scopeKind: "role", scope: "x", enabled: false, updatedBy: "test:sre", reason: "drain x" })]);
    expect(await t.redis.ttl(key)).toBe(-1);

    await setFlag(createPostgresFlagStore(), db.pool, { name: "HARNESS_ENABLED", scopeKind: "role", scope: "x", enabled: true, actor: "test:sre", reason: "undrain x" });
    await within(5_000, () => worker.harnessEnabled("role", "x"), "the harness to see HARNESS_ENABLED on again for role:x");
    expect(heard).toBe(2);

    // BUS_ROUTED and BUS_ENABLED travel the same way.
    await setFlag(createPostgresFlagStore(), db.pool, { name: "BUS_ROUTED", scopeKind: "team", scope: "ops", enabled: false, actor: "test:sre", reason: "local only" });
    await setFlag(createPostgresFlagStore(), db.pool, { name: "BUS_ENABLED", scopeKind: "global", enabled: false, actor: "test:sre", reason: "maintenance" });
    await within(5_000, () => !worker.busEnabled() && !worker.busRouted("team", "ops"), "the harness to see BUS_ENABLED and BUS_ROUTED off");
    expect(worker.busRouted("role", "x")).toBe(true);
  });

  it("writes the rows on every read, so a lost key comes back within a poll with nothing changed", async () => {
    const key = flagMirrorKey(t.prefix);
    const { flags, mirror } = coordinator();
    await setFlag(createPostgresFlagStore(), db.pool, { name: "HARNESS_ENABLED", scopeKind: "team", scope: "ops", enabled: false, actor: "test:sre", reason: "drain" });
    await flags.refresh();
    mirror.start();
    flags.start();
    await within(5_000, async () => (await t.redis.exists(key)) === 1, "the first mirror write");
    const first = parseFlagMirror((await t.redis.get(key))!).atMs;
    await t.redis.del(key);
    await within(5_000, async () => (await t.redis.exists(key)) === 1, "the mirror to be written again");
    const again = parseFlagMirror((await t.redis.get(key))!);
    expect(again.atMs).toBeGreaterThan(first);
    expect(again.rows).toMatchObject([{ name: "HARNESS_ENABLED", scopeKind: "team", scope: "ops", enabled: false }]);
  });

  it("gives the environment's defaults while no key exists, and says so once", async () => {
    const { logger, messages } = capturedLogger();
    const off = harness({ ...DEFAULTS, busEnabled: true, harnessEnabled: true, harnessScopes: ["role:x"], busRouted: ["team:ops"] }, logger);
    await off.refresh();
    await off.refresh();
    expect(off.loaded).toBe(true);
    expect(off.mirroredAtMs).toBeUndefined();
    expect(off.rows()).toEqual([]);
    expect(off.busEnabled()).toBe(true);
    expect(off.harnessEnabled("role", "x")).toBe(true);
    expect(off.harnessEnabled("role", "y")).toBe(false);
    expect(off.busRouted("team", "ops")).toBe(true);
    expect(off.busRouted("role", "x")).toBe(false);
    expect(messages().filter((m) => m.startsWith("no flags mirrored"))).toHaveLength(1);

    const allOff = harness({ ...DEFAULTS, busEnabled: false, harnessEnabled: false });
    await allOff.refresh();
    expect(allOff.busEnabled()).toBe(false);
    expect(allOff.harnessEnabled("role", "x")).toBe(false);
  });

  it("keeps the last good values when the key holds garbage, another version, or goes missing", async () => {
    const key = flagMirrorKey(t.prefix);
    const { logger, messages } = capturedLogger();
    const worker = harness(DEFAULTS, logger);
    await t.redis.set(key, encodeFlagMirror([row({ enabled: false })], 1_000));
    await worker.refresh();
    expect(worker.harnessEnabled("role", "x")).toBe(false);
    expect(worker.mirroredAtMs).toBe(1_000);

    for (const bad of ["not json {", "[]", JSON.stringify({ v: 2, atMs: 2_000, rows: [] }), JSON.stringify({ v: 1, atMs: 2_000, rows: [{ name: "HARNESS_ENABLED", scopeKind: "tenant" }] })]) {
      await t.redis.set(key, bad);
      await expect(worker.refresh()).resolves.toBeUndefined();
      expect(worker.harnessEnabled("role", "x")).toBe(false);
      expect(worker.mirroredAtMs).toBe(1_000);
    }
    expect(messages().filter((m) => m.startsWith("the flag mirror cannot be read"))).toHaveLength(1);

    // Redis losing the key (no coordinator deletes it) does not turn a drained harness back on.
    await t.redis.del(key);
    await worker.refresh();
    expect(worker.harnessEnabled("role", "x")).toBe(false);
    expect(messages().filter((m) => m.startsWith("the flag mirror is gone"))).toHaveLength(1);

    // A row of a flag a newer release added is skipped; the rest still apply.
    await t.redis.set(key, JSON.stringify({ v: 1, atMs: 3_000, rows: [row({ enabled: true }), { name: "NEW_FLAG_FROM_THE_FUTURE", scopeKind: "global" }] }));
    await worker.refresh();
    expect(worker.harnessEnabled("role", "x")).toBe(true);
    expect(worker.rows()).toHaveLength(1);
    expect(worker.mirroredAtMs).toBe(3_000);
    expect(messages()).toContain("the flag mirror is readable again");
  });

  it("keeps the coordinator's read working when Redis does not take the write, and writes again later", async () => {
    const { logger, messages } = capturedLogger();
    const health = new DependencyHealth();
    const flags = new LiveFlags({ db: db.pool, store: createPostgresFlagStore(), defaults: DEFAULTS });
    // Nothing listens on port 1: every command fails at once.
    const dead = new Redis("redis://127.0.0.1:1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    dead.on("error", () => {});
    const mirror = new FlagMirror({ flags, redis: dead, keyPrefix: t.prefix, logger, health });
    stops.push(() => mirror.stop(), async () => dead.disconnect());
    mirror.start();
    await expect(flags.refresh()).resolves.toBeUndefined();
    await mirror.flush();
    await expect(flags.refresh()).resolves.toBeUndefined();
    await mirror.flush();
    expect(health.isReachable("redis")).toBe(false);
    expect(messages().filter((m) => m.startsWith("mirroring flags to Redis failed"))).toHaveLength(2);

    // The same coordinator's next read, with Redis back, heals the mirror.
    const live = new FlagMirror({ flags, redis: t.redis, keyPrefix: t.prefix });
    stops.push(() => live.stop());
    live.start();
    await flags.refresh();
    await live.flush();
    expect(await t.redis.exists(flagMirrorKey(t.prefix))).toBe(1);
  });

  it("MirroredFlags never touches Postgres", async () => {
    // Statically: nothing it loads at run time, however indirectly, is of src/store/ or the pg driver.
    const loaded = runtimeImports("flags/mirrored-flags.ts");
    expect(loaded.modules).toContain("flags/flag-mirror.ts");
    expect(loaded.modules.filter((module) => module.startsWith("store/"))).toEqual([]);
    expect(loaded.packages).not.toContain("pg");

    // At run time: polling the mirror sends no query through any pg client.
    const query = vi.spyOn(pg.Client.prototype, "query");
    const connect = vi.spyOn(pg.Client.prototype, "connect");
    try {
      await t.redis.set(flagMirrorKey(t.prefix), encodeFlagMirror([row({ enabled: false })], Date.now()));
      const worker = harness();
      worker.start();
      await within(5_000, () => !worker.harnessEnabled("role", "x"), "the harness to read the mirror");
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(query).not.toHaveBeenCalled();
      expect(connect).not.toHaveBeenCalled();
    } finally {
      query.mockRestore();
      connect.mockRestore();
    }
  });
});

const SRC = join(dirname(fileURLToPath(import.meta.url)), "../../src");
// `import type` / `export type` are erased by the compiler: they load nothing.
const RUNTIME_IMPORT = /(?:^|[\s;])(?:import|export)\s(?!type\s)[^;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

/** Every src module (src-relative) and package `entry` loads at run time, transitively. */
function runtimeImports(entry: string): { modules: string[]; packages: string[] } {
  const modules = new Set<string>();
  const packages = new Set<string>();
  const visit = (module: string): void => {
    if (modules.has(module)) return;
    modules.add(module);
    for (const match of readFileSync(join(SRC, module), "utf8").matchAll(RUNTIME_IMPORT)) {
      const spec = match[1] ?? match[2]!;
      if (spec.startsWith(".")) visit(normalize(relative(SRC, join(SRC, dirname(module), spec))).replace(/\.js$/, ".ts"));
      else packages.add(spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0]!);
    }
  };
  visit(entry);
  return { modules: [...modules].sort(), packages: [...packages].sort() };
}
