/**
 * A unique key prefix per test and a cleanup that deletes everything under it. The connection is a cluster when
 * REDIS_URL names one (the cluster project of vitest.config.ts).
 */
import { randomBytes } from "node:crypto";
import { Cluster, Redis } from "ioredis";
import type { RedisClient } from "../../src/bus/redis-connection.js";
import { deleteKeys } from "../../src/bus/redis-scan.js";
import { parseRedisUrl } from "../../src/bus/redis-url.js";
import { redisUrl } from "./env.js";

export interface TestRedis {
  prefix: string;
  redis: RedisClient;
  /** Deletes every key under the prefix and closes the connection. */
  cleanup(): Promise<void>;
}

export function uniquePrefix(): string {
  return `sytest:${randomBytes(5).toString("hex")}:`;
}

/** A plain connection to the tests' Redis (or cluster) that gives up on a command after three retries. */
export function testRedisConnection(url: string = redisUrl()): RedisClient {
  const target = parseRedisUrl(url);
  if (target.kind === "single") return new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 3 });
  return new Cluster(target.nodes, { lazyConnect: true, redisOptions: { maxRetriesPerRequest: 3 } });
}

export async function createTestRedis(prefix: string = uniquePrefix()): Promise<TestRedis> {
  const redis = testRedisConnection();
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

export async function deleteByPrefix(redis: RedisClient, prefix: string): Promise<void> {
  await deleteKeys(redis, `${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`);
}
