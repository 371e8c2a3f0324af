/**
 * A unique key prefix per test and a cleanup that deletes everything under it.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { redisUrl } from "./env.js";

export interface TestRedis {
  prefix: string;
  redis: Redis;
  /** Deletes every key under the prefix and closes the connection. */
  cleanup(): Promise<void>;
}

export function uniquePrefix(): string {
  return `sytest:${randomBytes(5).toString("hex")}:`;
}

export async function createTestRedis(prefix: string = uniquePrefix()): Promise<TestRedis> {
  const redis = new Redis(redisUrl(), { lazyConnect: true, maxRetriesPerRequest: 3 });
  await redis.connect();
  return {
    prefix,
    redis,
    async cleanup() {
      await deleteByPrefix(redis, prefix);
      redis.disconnect();
    },
  };
}

export async function deleteByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== "0");
}
