import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertRedisSafe } from "../../src/bus/redis-check.js";
import { ErrorCode } from "../../src/errors.js";
import { createLogger } from "../../src/logger.js";
import { redisUrl } from "../support/env.js";

let redis: Redis;

beforeAll(async () => {
  redis = new Redis(redisUrl(), { lazyConnect: true, maxRetriesPerRequest: 3 });
  await redis.connect();
});

afterAll(() => {
  redis.disconnect();
});

async function currentPolicy(): Promise<string> {
  const [, policy] = (await redis.config("GET", "maxmemory-policy")) as [string, string];
  return policy;
}

/** Runs `check` with the server's policy set to `policy`, restoring the original whatever happens. */
async function withPolicy<T>(policy: string, check: () => Promise<T>): Promise<T> {
  const original = await currentPolicy();
  await redis.config("SET", "maxmemory-policy", policy);
  try {
    return await check();
  } finally {
    await redis.config("SET", "maxmemory-policy", original);
  }
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
  });

  it("warns and continues when CONFIG is not permitted", async () => {
    const user = `sytest-${randomBytes(4).toString("hex")}`;
    const password = randomBytes(12).toString("hex");
    await redis.acl("SETUSER", user, "on", `>${password}`, "~*", "&*", "+@all", "-config");
    const limited = new Redis(redisUrl(), { username: user, password, lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await limited.connect();
      const { logger, lines } = captureLogs();
      await assertRedisSafe(limited, { logger });
      const warnings = lines().filter((line) => line.level === 40);
      expect(warnings).toHaveLength(1);
      expect(String(warnings[0]!.msg)).toContain('make sure it is "noeviction"');
    } finally {
      limited.disconnect();
      await redis.acl("DELUSER", user);
    }
  });

  it("reports an unreachable Redis as UNAVAILABLE", async () => {
    const closed = new Redis(redisUrl(), { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    await expect(assertRedisSafe(closed)).rejects.toMatchObject({ code: ErrorCode.Unavailable });
    closed.disconnect();
  });
});
