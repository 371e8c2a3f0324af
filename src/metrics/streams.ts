/**
 * Finding the streams that exist under a key prefix, for the queue gauges: a SCAN of `${prefix}{*}` keeping the
 * keys that are exactly a stream key (`${prefix}{role:writer}`), not its dead-letter stream.
 */
import type { Redis } from "ioredis";

/** Logical names of the streams under `prefix`, sorted. */
export async function discoverStreams(redis: Redis, prefix: string): Promise<string[]> {
  const pattern = `${prefix.replace(/[*?[\]\\]/g, "\\$&")}{*}`;
  const found = new Set<string>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      // Stream names hold no braces, so the hash tag is exactly the logical name.
      const match = /^\{([^{}]+)\}$/.exec(key.slice(prefix.length));
      if (match) found.add(match[1]!);
    }
  } while (cursor !== "0");
  return [...found].sort();
}
