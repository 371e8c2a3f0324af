/**
 * Runs a Lua script by SHA, loading it on NOSCRIPT. We do not use `redis.defineCommand` because the connection
 * usually belongs to the caller and defining commands on it would change an object we do not own.
 */
import { createHash } from "node:crypto";
import type { RedisClient } from "../redis-connection.js";

export interface LuaScript {
  readonly name: string;
  /** `"variable"`: the script takes any number of keys (at least one). */
  readonly numberOfKeys: number | "variable";
  readonly source: string;
  readonly sha: string;
}

export function defineScript(name: string, numberOfKeys: number | "variable", source: string): LuaScript {
  return { name, numberOfKeys, source, sha: createHash("sha1").update(source).digest("hex") };
}

export type ScriptArg = string | number | Buffer;

/**
 * Evaluates `script`. With `buffers`, bulk replies come back as Buffers (binary-safe); integers stay numbers.
 */
export async function runScript(
  redis: RedisClient,
  script: LuaScript,
  keys: readonly string[],
  args: readonly ScriptArg[],
  buffers = false,
): Promise<unknown> {
  if (script.numberOfKeys === "variable" ? keys.length === 0 : keys.length !== script.numberOfKeys) {
    throw new Error(`script ${script.name} takes ${script.numberOfKeys === "variable" ? "at least 1" : script.numberOfKeys} keys, got ${keys.length}`);
  }
  const call = (command: string, head: string): Promise<unknown> =>
    buffers ? redis.callBuffer(command, head, keys.length, ...keys, ...args) : redis.call(command, head, keys.length, ...keys, ...args);
  try {
    return await call("EVALSHA", script.sha);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith("NOSCRIPT")) throw error;
    return await call("EVAL", script.source);
  }
}
