/**
 * The Redis command connection every process opens, set up to ride out a restart or failover: it reconnects with
 * backoff (100 ms more per attempt, at most 2 s apart), commands wait in the offline queue meanwhile instead of
 * failing (`maxRetriesPerRequest: null`), and its connection events tell the process's DependencyHealth, which
 * logs the outage once. The bus's blocking connections are duplicates of it and inherit the same options.
 *
 * `REDIS_URL` may name a Redis Cluster (`redis+cluster://host:port,host:port`, see redis-url.ts); the connection is
 * then an ioredis `Cluster` with the same resilience. Code that holds the command connection types it as
 * `RedisClient` and, where a command is per server (SCAN, INFO, CONFIG, ACL), runs it on every master (`mastersOf`).
 */
import { Cluster, Redis } from "ioredis";
import type { DependencyHealth } from "../process/dependency-health.js";
import { parseRedisUrl } from "./redis-url.js";

/** A Redis command connection: one server or a cluster. */
export type RedisClient = Redis | Cluster;

/** Delay before reconnect attempt `attempt` (1, 2, …). */
export function redisReconnectDelayMs(attempt: number): number {
  return Math.min(attempt * 100, 2_000);
}

export function createRedisConnection(url: string, options: { health?: DependencyHealth } = {}): RedisClient {
  const target = parseRedisUrl(url);
  let redis: RedisClient;
  if (target.kind === "single") {
    redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: redisReconnectDelayMs });
  } else {
    redis = new Cluster(target.nodes, {
      lazyConnect: true,
      clusterRetryStrategy: redisReconnectDelayMs,
      // A failover takes the cluster a few seconds (node timeout + election): keep retrying a redirected or
      // CLUSTERDOWN command for that long rather than failing it after ioredis' default 16 tries of 100 ms.
      maxRedirections: 100,
      retryDelayOnClusterDown: 200,
      retryDelayOnFailover: 200,
      redisOptions: {
        maxRetriesPerRequest: null,
        ...(target.username !== undefined ? { username: target.username } : {}),
        ...(target.password !== undefined ? { password: target.password } : {}),
        ...(target.tls ? { tls: {} } : {}),
      },
    });
  }
  trackRedisHealth(redis, options.health);
  return redis;
}

/**
 * The servers that own keys: the one Redis, or every master of a cluster. A cluster knows its masters only once it
 * has read the slot map, so a cluster still connecting is waited for (one PING through the offline queue).
 */
export async function mastersOf(redis: RedisClient): Promise<Redis[]> {
  if (!(redis instanceof Cluster)) return [redis];
  if (redis.nodes("master").length === 0) await redis.ping();
  return redis.nodes("master");
}

export function isCluster(redis: RedisClient): redis is Cluster {
  // ioredis sets `isCluster` on both classes; read rather than `instanceof`, so a wrapped connection answers too.
  return (redis as { isCluster?: boolean }).isCluster === true;
}

/**
 * Reports a connection's outages and recoveries to `health`. Also the connection's `error` listener: without one,
 * ioredis prints every failed reconnect attempt to the console.
 */
export function trackRedisHealth(redis: RedisClient, health: DependencyHealth | undefined): void {
  redis.on("error", (error: Error) => health?.unreachable("redis", error));
  // A server that shuts down cleanly closes the socket without an error: the reconnect is the sign.
  redis.on("reconnecting", () => health?.unreachable("redis", new Error("the connection to Redis closed")));
  redis.on("ready", () => health?.reachable("redis"));
}
