/**
 * Finding the streams that exist under a key prefix (SCAN on every master, never KEYS): the logical names of the stream keys
 * (`${prefix}{role:writer}`) or of their dead-letter streams (`${prefix}{role:writer}:dead`).
 */
import type { RedisClient } from "./redis-connection.js";
import { scanKeys } from "./redis-scan.js";

export async function discoverStreams(redis: RedisClient, prefix: string, options: { deadLetters?: boolean } = {}): Promise<string[]> {
  const suffix = options.deadLetters ? ":dead" : "";
  const pattern = `${prefix.replace(/[*?[\]\\]/g, "\\$&")}{*}${suffix}`;
  const exact = new RegExp(`^\\{([^{}]+)\\}${suffix}$`);
  const found = new Set<string>();
  for await (const keys of scanKeys(redis, pattern)) {
    for (const key of keys) {
      // Stream names hold no braces, so the hash tag is exactly the logical name.
      const match = exact.exec(key.slice(prefix.length));
      if (match) found.add(match[1]!);
    }
  }
  return [...found].sort();
}
