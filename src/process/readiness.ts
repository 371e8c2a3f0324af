/**
 * Readiness, for `/readyz` of every process that serves HTTP (the gateway; a coordinator or harness with
 * SWITCHYARD_METRICS_PORT): Redis answers PING and, in a process that holds a database (not a harness), Postgres
 * answers SELECT 1 and the schema is exactly this build's.
 * Checked live on every request, so a probe sees an outage while it lasts and the recovery as soon as it is over;
 * each result also feeds the process's DependencyHealth (a successful probe ends an outage it recorded, a failed
 * one caused by an unreachable server starts one), and the report names the outage in progress with its start.
 */
import type { RedisClient } from "../bus/redis-connection.js";
import type { DependencyHealth, Dependency } from "./dependency-health.js";
import { isDatabaseUnavailable, type Pool } from "../store/db.js";
import { assertSchemaCurrent } from "../store/migrate.js";

export interface ReadinessDeps {
  /** Absent for a process that holds no database (a harness): Postgres and the schema then read "not used". */
  pool?: Pick<Pool, "query">;
  redis: Pick<RedisClient, "ping" | "status">;
  timeoutMs: number;
  health?: DependencyHealth;
}

export interface ReadinessReport {
  ready: boolean;
  checks: { redis: string; postgres: string; schema: string };
  /** Outages in progress as this process sees them: the dependency, since when (ISO time) and why. */
  outages?: Partial<Record<Dependency, { since: string; reason: string }>>;
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** "ok", or why not; `onFailure` hears the error (not a timeout of ours). */
async function check(work: () => Promise<unknown>, ms: number, what: string, onFailure?: (error: unknown) => void): Promise<string> {
  try {
    await withTimeout(work(), ms, what);
    return "ok";
  } catch (error) {
    onFailure?.(error);
    return (error as Error).message || String(error);
  }
}

const NOT_USED = "not used: this process holds no database";

export async function readiness(deps: ReadinessDeps): Promise<ReadinessReport> {
  const { health } = deps;
  const askedAtMs = health?.now();
  const pool = deps.pool;
  const [redis, postgres] = await Promise.all([
    // While disconnected, ioredis would queue the PING until it reconnects: answer from the connection state instead.
    deps.redis.status === "ready" ? check(() => deps.redis.ping(), deps.timeoutMs, "Redis") : Promise.resolve(`Redis is not connected (${deps.redis.status})`),
    pool
      ? check(() => pool.query("SELECT 1"), deps.timeoutMs, "Postgres", (error) => {
          if (isDatabaseUnavailable(error)) health?.unreachable("postgres", error);
        })
      : Promise.resolve(NOT_USED),
  ]);
  if (postgres === "ok") health?.reachable("postgres", askedAtMs);
  if (redis === "ok") health?.reachable("redis", askedAtMs);
  let schema = NOT_USED;
  if (pool) schema = postgres === "ok" ? await check(() => assertSchemaCurrent(pool), deps.timeoutMs, "the schema check") : "not checked: Postgres is not reachable";
  const databaseOk = !pool || (postgres === "ok" && schema === "ok");
  const report: ReadinessReport = { ready: redis === "ok" && databaseOk, checks: { redis, postgres, schema } };
  const outages: NonNullable<ReadinessReport["outages"]> = {};
  for (const dependency of ["postgres", "redis"] as const) {
    const outage = health?.outage(dependency);
    if (outage) outages[dependency] = { since: new Date(outage.sinceMs).toISOString(), reason: outage.reason };
  }
  if (Object.keys(outages).length > 0) report.outages = outages;
  return report;
}
