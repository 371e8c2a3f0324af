/**
 * Start-up check that Redis will not silently drop bus entries.
 *
 * An evicting `maxmemory-policy` deletes whole keys under memory pressure, and for us a key is a whole queue of
 * work. Every policy except `noeviction` is refused, including `volatile-*`: they evict nothing only while no key
 * has a TTL, which nothing guarantees on a shared Redis.
 */
import type { Redis } from "ioredis";
import { mastersOf, type RedisClient } from "./redis-connection.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";

export const SAFE_MAXMEMORY_POLICY = "noeviction";

export interface RedisSafetyOptions {
  /** @defaultValue silent */
  logger?: Logger;
}

/**
 * Throws UNSAFE_REDIS when Redis may evict keys. When CONFIG is not permitted (managed Redis, ACLs) it logs a
 * warning and returns: we cannot tell, and refusing to start on every managed service would be worse.
 * On a cluster every master is checked: the setting is per server, and one evicting master loses its slots' work.
 */
export async function assertRedisSafe(redis: RedisClient, options: RedisSafetyOptions = {}): Promise<void> {
  let masters: Redis[];
  try {
    masters = await mastersOf(redis);
  } catch (error) {
    throw new SwitchyardError(ErrorCode.Unavailable, `cannot reach Redis to check maxmemory-policy: ${(error as Error).message}`, { cause: error });
  }
  for (const server of masters) await assertServerSafe(server, redis.isCluster ? `${server.options.host}:${server.options.port}` : undefined, options);
}

async function assertServerSafe(redis: Redis, node: string | undefined, options: RedisSafetyOptions): Promise<void> {
  const logger = options.logger ?? silentLogger;
  const which = node ? `Redis node ${node}` : "Redis";
  let reply: unknown;
  try {
    reply = await redis.config("GET", "maxmemory-policy");
  } catch (error) {
    if (!isServerReply(error)) {
      throw new SwitchyardError(ErrorCode.Unavailable, `cannot reach Redis to check maxmemory-policy: ${(error as Error).message}`, { cause: error });
    }
    logger.warn(
      { err: error },
      `cannot read ${which} maxmemory-policy (${(error as Error).message}); make sure it is "${SAFE_MAXMEMORY_POLICY}", or queued work can be evicted`,
    );
    return;
  }
  const policy = policyOf(reply);
  if (policy === undefined) {
    logger.warn(`${which} did not report maxmemory-policy; make sure it is "${SAFE_MAXMEMORY_POLICY}", or queued work can be evicted`);
    return;
  }
  if (policy !== SAFE_MAXMEMORY_POLICY) {
    throw new SwitchyardError(
      ErrorCode.UnsafeRedis,
      `${which} maxmemory-policy is "${policy}", which can evict bus streams and lose work; set it to "${SAFE_MAXMEMORY_POLICY}" ` +
        `(CONFIG SET maxmemory-policy ${SAFE_MAXMEMORY_POLICY}, or "maxmemory-policy ${SAFE_MAXMEMORY_POLICY}" in redis.conf / your provider's parameter group)`,
      { details: { policy, required: SAFE_MAXMEMORY_POLICY, ...(node ? { node } : {}) } },
    );
  }
}

/** CONFIG GET answers a flat [name, value] list (RESP2) or a map (RESP3). */
function policyOf(reply: unknown): string | undefined {
  if (Array.isArray(reply)) {
    const index = reply.findIndex((item) => String(item).toLowerCase() === "maxmemory-policy");
    return index >= 0 && index + 1 < reply.length ? String(reply[index + 1]).toLowerCase() : undefined;
  }
  if (reply && typeof reply === "object" && "maxmemory-policy" in reply) {
    return String((reply as Record<string, unknown>)["maxmemory-policy"]).toLowerCase();
  }
  return undefined;
}

/**
 * Redis refused the command itself (NOPERM from ACLs, a renamed or disabled CONFIG), as opposed to a connection or
 * authentication failure, which would break the bus as well and so is not waved through.
 */
function isServerReply(error: unknown): boolean {
  if (!(error instanceof Error) || /^(NOAUTH|WRONGPASS)\b/.test(error.message)) return false;
  return error.name === "ReplyError" || /^(ERR|NOPERM)\b/.test(error.message);
}
