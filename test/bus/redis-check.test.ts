import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertRedisSafe } from "../../src/bus/redis-check.js";
import { mastersOf, type RedisClient } from "../../src/bus/redis-connection.js";
import { parseRedisUrl } from "../../src/bus/redis-url.js";
import { ErrorCode } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { redisUrl } from "../support/env.js";
import { testRedisConnection } from "../support/redis.js";

let redis: RedisClient;
/** The server whose policy the tests change: on a cluster the last master, so the check must look past the first. */
let server: Redis;
let servers: Redis[];

beforeAll(async () => {
  redis = testRedisConnection();
  await redis.connect();
  servers = await mastersOf(redis);
  server = servers[servers.length - 1]!;
});

afterAll(() => {
  redis.disconnect();
});

async function currentPolicy(): Promise<string> {
  const [, policy] = (await server.config("GET", "maxmemory-policy")) as [string, string];
  return policy;
}

/** Runs `check` with the server's policy set to `policy`, restoring the original whatever happens. */
async function withPolicy<T>(policy: string, check: () => Promise<T>): Promise<T> {
  const original = await currentPolicy();
  await server.config("SET", "maxmemory-policy", policy);
  try {
    return await check();
  } finally {
    await server.config("SET", "maxmemory-policy", original);
  }
}

/** A connection as `user` (ACL users are per server: on a cluster the user must exist on every node). */
function connectAs(user: string, password: string): RedisClient {
  const target = parseRedisUrl(redisUrl());
  if (target.kind === "single") return new Redis(redisUrl(), { username: user, password, lazyConnect: true, maxRetriesPerRequest: 1 });
  return new Cluster(target.nodes, { lazyConnect: true, redisOptions: { username: user, password, maxRetriesPerRequest: 1 } });
}

function captureLogs(): { logger: ReturnType<typeof createLogger>; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const logger = createLogger({ level: "debug", destination });
  const lines = () => chunks.join("").split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
  return { logger, lines };
}

describe("assertRedisSafe", () => {
  it("passes with noeviction", async () => {
    await withPolicy("noeviction", () => assertRedisSafe(redis));
  });

  it.each(["allkeys-lru", "volatile-lru", "allkeys-random", "volatile-ttl"])("refuses %s and says what to set", async (policy) => {
    const error = await withPolicy(policy, () => assertRedisSafe(redis).then(() => undefined, (e: unknown) => e));
    expect(error).toMatchObject({ code: ErrorCode.UnsafeRedis, details: { policy, required: "noeviction" } });
    expect((error as Error).message).toContain("CONFIG SET maxmemory-policy noeviction");
    expect(await currentPolicy()).not.toBe(policy);
    if (servers.length > 1) expect((error as { details: { node?: string } }).details.node).toBe(`${server.options.host}:${server.options.port}`);
  });

  it("warns and continues when CONFIG is not permitted", async () => {
    const user = `sytest-${randomBytes(4).toString("hex")}`;
    const password = randomBytes(12).toString("hex");
    for (const each of servers) await each.acl("SETUSER", user, "on", `>${password}`, "~*", "&*", "+@all", "-config");
    const limited = connectAs(user, password);
    try {
      await limited.connect();
      const { logger, lines } = captureLogs();
      await assertRedisSafe(limited, { logger });
      const warnings = lines().filter((line) => line.level === 40);
      expect(warnings).toHaveLength(servers.length);
      expect(String(warnings[0]!.msg)).toContain('make sure it is "noeviction"');
    } finally {
      limited.disconnect();
      for (const each of servers) await each.acl("DELUSER", user);
    }
  });

  it("reports an unreachable Redis as UNAVAILABLE", async () => {
    const target = parseRedisUrl(redisUrl());
    const closed =
      target.kind === "single"
        ? new Redis(redisUrl(), { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false })
        : new Cluster(target.nodes, { lazyConnect: true, enableOfflineQueue: false, clusterRetryStrategy: () => null });
    await expect(assertRedisSafe(closed)).rejects.toMatchObject({ code: ErrorCode.Unavailable });
    closed.disconnect();
  });
});
