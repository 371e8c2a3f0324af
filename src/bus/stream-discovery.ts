/**
 * Finding the streams that exist under a key prefix (SCAN, never KEYS): the logical names of the stream keys
 * (`${prefix}{role:writer}`) or of their dead-letter streams (`${prefix}{role:writer}:dead`).
 */
import type { Redis } from "ioredis";

export async function discoverStreams(redis: Redis, prefix: string, options: { deadLetters?: boolean } = {}): Promise<string[]> {
  const suffix = options.deadLetters ? ":dead" : "";
  const pattern = `${prefix.replace(/[*?[\]\\]/g, "\\$&")}{*}${suffix}`;
  const exact = new RegExp(`^\\{([^{}]+)\\}${suffix}$`);
  const found = new Set<string>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      // Stream names hold no braces, so the hash tag is exactly the logical name.
      const match = exact.exec(key.slice(prefix.length));
      if (match) found.add(match[1]!);
    }
  } while (cursor !== "0");
  return [...found].sort();
}
