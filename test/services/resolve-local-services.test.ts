/**
 * Which services a process uses: an explicit URL is used as is and never replaced (a dead one is an error naming
 * its variable), a server answering on the default address is used, `off` never starts anything, and with nothing
 * answering the embedded PostgreSQL and redis-server are started (real processes, scratch folder and ports).
 * "The default address" is pointed at closed ports here, so the shared 5432/6379 stay out of it.
 */
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig, type Config } from "../../src/config/index.js";
import { answers } from "../../src/services/probe.js";
import { pings } from "../../src/services/redis-server.js";
import { resolveLocalServices } from "../../src/services/resolve-local-services.js";
import { freePort } from "../../src/services/server-process.js";
import { adminUrl, redisUrl } from "../support/env.js";
import { processesMentioning, scratchDir } from "./scratch.js";

const dir = scratchDir("resolve");
afterAll(() => dir.remove());

/** A port nothing listens on. */
const closedPort = () => freePort(0);

async function configWith(overrides: { databaseUrl?: string; redisUrl?: string; databaseUrlSet?: boolean; redisUrlSet?: boolean; embedded?: "auto" | "off"; dataDir?: string }): Promise<Config> {
  const config = loadConfig({});
  return {
    ...config,
    databaseUrl: overrides.databaseUrl ?? `postgres://postgres@127.0.0.1:${await closedPort()}/switchyard`,
    redisUrl: overrides.redisUrl ?? `redis://127.0.0.1:${await closedPort()}`,
    services: {
      redisUrlSet: overrides.redisUrlSet ?? false,
      databaseUrlSet: overrides.databaseUrlSet ?? false,
      embedded: overrides.embedded ?? "auto",
      dataDir: overrides.dataDir ?? join(dir.path, "never"),
    },
  };
}

describe("answers (the 'nothing answers' detection)", () => {
  it("is true for a listening port and false for a closed one", async () => {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    try {
      expect(await answers("127.0.0.1", port)).toBe(true);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(await answers("127.0.0.1", port)).toBe(false);
  });
});

describe("explicit URLs", () => {
  it("a DATABASE_URL that does not answer is an error naming the variable; nothing is started in its place", async () => {
    const port = await closedPort();
    const config = await configWith({ databaseUrl: `postgres://postgres@127.0.0.1:${port}/switchyard`, databaseUrlSet: true });
    const error = await resolveLocalServices({ config, cwd: dir.path }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "UNAVAILABLE", details: { variable: "DATABASE_URL", address: `127.0.0.1:${port}` } });
    expect((error as Error).message).toMatch(new RegExp(`nothing answers at 127\\.0\\.0\\.1:${port} \\(DATABASE_URL\\)`));
    expect(existsSync(config.services.dataDir)).toBe(false);
  });

  it("a REDIS_URL that does not answer is an error naming the variable (its password not shown)", async () => {
    const port = await closedPort();
    const config = await configWith({ databaseUrl: adminUrl(), databaseUrlSet: true, redisUrl: `redis://:hunter2@127.0.0.1:${port}`, redisUrlSet: true });
    const error = await resolveLocalServices({ config, cwd: dir.path }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "UNAVAILABLE", details: { variable: "REDIS_URL" } });
    expect((error as Error).message).toContain(`127.0.0.1:${port}`);
    expect((error as Error).message).not.toContain("hunter2");
    expect(existsSync(config.services.dataDir)).toBe(false);
  });

  it("explicit URLs that answer are used as they are, and stop() leaves them running", async () => {
    const config = await configWith({ databaseUrl: adminUrl(), databaseUrlSet: true, redisUrl: redisUrl(), redisUrlSet: true });
    const services = await resolveLocalServices({ config, cwd: dir.path });
    expect(services.config.databaseUrl).toBe(adminUrl());
    expect(services.config.redisUrl).toBe(redisUrl());
    expect(services.lines[0]).toMatch(/^PostgreSQL: DATABASE_URL \(/);
    expect(services.lines[1]).toMatch(/^Redis: REDIS_URL \(/);
    await services.stop();
    expect(await pings(Number(new URL(redisUrl()).port || 6379), new URL(redisUrl()).hostname)).toBe(true);
  });

  it("with `wait` (long-running processes) an explicit URL is left for the runtime to wait for", async () => {
    const url = `postgres://postgres@127.0.0.1:${await closedPort()}/switchyard`;
    const config = await configWith({ databaseUrl: url, databaseUrlSet: true, redisUrl: redisUrl(), redisUrlSet: true });
    const services = await resolveLocalServices({ config, cwd: dir.path, unreachable: "wait" });
    expect(services.config.databaseUrl).toBe(url);
    expect(services.postgres.owned).toBe(false);
  });
});

describe("no URL configured", () => {
  it("a server answering on the default address is used: 'local server at …'", async () => {
    // The shared servers play "the default address" here, with no URL "set".
    const config = await configWith({ databaseUrl: adminUrl(), redisUrl: redisUrl() });
    const services = await resolveLocalServices({ config, cwd: dir.path });
    expect(services.lines).toEqual([
      `PostgreSQL: local server at ${new URL(adminUrl()).host}`,
      `Redis: local server at ${new URL(redisUrl()).hostname}:${new URL(redisUrl()).port || 6379}`,
    ]);
    expect(services.postgres.owned || services.redis.owned).toBe(false);
    expect(existsSync(config.services.dataDir)).toBe(false);
  });

  it("SWITCHYARD_EMBEDDED_SERVICES=off never starts anything: an error naming it, or (wait) the default left as is", async () => {
    const config = await configWith({ embedded: "off" });
    const error = await resolveLocalServices({ config, cwd: dir.path }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "UNAVAILABLE", details: { variable: "SWITCHYARD_EMBEDDED_SERVICES" } });
    expect((error as Error).message).toMatch(/^PostgreSQL: nothing answers at 127\.0\.0\.1:\d+ and SWITCHYARD_EMBEDDED_SERVICES=off/);
    const waiting = await resolveLocalServices({ config, cwd: dir.path, unreachable: "wait" });
    expect(waiting.config.databaseUrl).toBe(config.databaseUrl);
    expect(waiting.config.redisUrl).toBe(config.redisUrl);
    expect(waiting.lines.every((line) => line.includes("SWITCHYARD_EMBEDDED_SERVICES=off"))).toBe(true);
    expect(existsSync(config.services.dataDir)).toBe(false);
  });

  it("with nothing answering, starts the embedded PostgreSQL and redis-server, says so, and stops them", async () => {
    const config = await configWith({ dataDir: "data" });
    const services = await resolveLocalServices({ config, cwd: dir.path, durability: "scratch" });
    const dataDir = join(dir.path, "data");
    try {
      expect(services.lines[0]).toMatch(/^PostgreSQL: embedded 15\.\d+ on 127\.0\.0\.1:\d+ \(data in data\/pg\)$/);
      expect(services.lines[1]).toMatch(/^Redis: redis-server \d+\.\d+\.\d+ on 127\.0\.0\.1:\d+ \(no persistence; log in data\/redis\)$/);
      expect(new URL(services.config.databaseUrl).pathname).toBe("/switchyard");
      const client = new pg.Client({ connectionString: services.config.databaseUrl.replace(/switchyard$/, "postgres") });
      await client.connect();
      expect((await client.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
      await client.end();
      expect(await pings(Number(new URL(services.config.redisUrl).port))).toBe(true);
    } finally {
      await services.stop();
    }
    expect(processesMentioning(dataDir)).toEqual([]);
  });
});
