/**
 * SCAN over every server that owns keys (all masters of a cluster, which SCAN only their own slots), never KEYS.
 */
import { mastersOf, type RedisClient } from "./redis-connection.js";

const SCAN_COUNT = 1000;

/** Every key matching `pattern`, a batch at a time (batches may repeat a key, as SCAN does). */
export async function* scanKeys(redis: RedisClient, pattern: string): AsyncGenerator<string[]> {
  for (const server of await mastersOf(redis)) {
    let cursor = "0";
    do {
      const [next, keys] = await server.scan(cursor, "MATCH", pattern, "COUNT", SCAN_COUNT);
      cursor = next;
      if (keys.length > 0) yield keys;
    } while (cursor !== "0");
  }
}

/**
 * Deletes every key matching `pattern`, one UNLINK per key (a multi-key UNLINK would have to stay within one slot on
 * a cluster). The commands are sent without waiting for each other, so ioredis writes them back to back.
 */
export async function deleteKeys(redis: RedisClient, pattern: string): Promise<number> {
  let deleted = 0;
  for await (const keys of scanKeys(redis, pattern)) {
    const results = await Promise.all(keys.map((key) => redis.unlink(key)));
    deleted += results.reduce((sum, n) => sum + n, 0);
  }
  return deleted;
}
