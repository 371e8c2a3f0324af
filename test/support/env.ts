/**
 * Where the tests find Redis and Postgres: REDIS_URL / DATABASE_URL, defaulting to the local servers. In the
 * `cluster` vitest project REDIS_URL is the run's Redis Cluster (set by cluster-env.ts); spawned processes inherit it.
 */

/**
 * The environment that switches every live flag on except A2A egress (flags default off), for CLI commands and
 * child processes in tests that are not about flags.
 */
export const FLAGS_ON_ENV: Readonly<Record<string, string>> = {
  SWITCHYARD_BUS_ENABLED: "true",
  SWITCHYARD_COORDINATOR_ENABLED: "true",
  SWITCHYARD_COORDINATOR_TENANTS: "*",
  SWITCHYARD_HARNESS_ENABLED: "true",
  SWITCHYARD_HARNESS_SCOPES: "*",
  SWITCHYARD_BUS_ROUTED: "*",
};

/**
 * Short recovery timings for crash tests' child processes: a killed consumer's entries are reclaimed, a crashed
 * writer's outbox rows relayed and a stopping process gone within a second or two.
 */
export const FAST_RECOVERY_ENV: Readonly<Record<string, string>> = {
  SWITCHYARD_RECLAIM_IDLE_MS: "1500",
  SWITCHYARD_HEARTBEAT_MS: "500",
  SWITCHYARD_SWEEP_INTERVAL_MS: "200",
  SWITCHYARD_OUTBOX_STALE_MS: "500",
  SWITCHYARD_BLOCK_MS: "200",
  SWITCHYARD_SHUTDOWN_GRACE_MS: "500",
};

export function redisUrl(): string {
  return process.env.REDIS_URL || "redis://127.0.0.1:6379";
}

function baseDatabaseUrl(): URL {
  return new URL(process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres");
}

export function databaseUrl(name: string): string {
  const url = baseDatabaseUrl();
  url.pathname = `/${name}`;
  return url.toString();
}

export function adminUrl(): string {
  return databaseUrl("postgres");
}
