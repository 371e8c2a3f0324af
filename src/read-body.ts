/**
 * Reads a plain Node request body up to `limit` bytes; undefined when it was larger (the rest is drained, not
 * kept, so the caller can still answer on the same connection).
 */
import type { IncomingMessage } from "node:http";

export function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) over = true;
      if (!over) chunks.push(chunk);
    });
    req.on("end", () => resolve(over ? undefined : Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
