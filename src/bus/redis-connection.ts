/**
 * The Redis command connection every process opens, set up to ride out a restart or failover: it reconnects with
 * backoff (100 ms more per attempt, at most 2 s apart), commands wait in the offline queue meanwhile instead of
 * failing (`maxRetriesPerRequest: null`), and its connection events tell the process's DependencyHealth, which
 * logs the outage once. The bus's blocking connections are duplicates of it and inherit the same options.
 */
import { Redis } from "ioredis";
import type { DependencyHealth } from "../dependency-health.js";

/** Delay before reconnect attempt `attempt` (1, 2, …). */
export function redisReconnectDelayMs(attempt: number): number {
  return Math.min(attempt * 100, 2_000);
}

export function createRedisConnection(url: string, options: { health?: DependencyHealth } = {}): Redis {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: redisReconnectDelayMs });
  trackRedisHealth(redis, options.health);
  return redis;
}

/**
 * Reports a connection's outages and recoveries to `health`. Also the connection's `error` listener: without one,
 * ioredis prints every failed reconnect attempt to the console.
 */
export function trackRedisHealth(redis: Redis, health: DependencyHealth | undefined): void {
  redis.on("error", (error: Error) => health?.unreachable("redis", error));
  // A server that shuts down cleanly closes the socket without an error: the reconnect is the sign.
  redis.on("reconnecting", () => health?.unreachable("redis", new Error("the connection to Redis closed")));
  redis.on("ready", () => health?.reachable("redis"));
}
