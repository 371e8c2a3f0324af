/**
 * `/healthz`: the process is up and serving HTTP (no dependencies checked — a liveness probe must not restart a
 * healthy gateway because Postgres blinked). `/readyz`: Redis answers PING, Postgres answers SELECT 1, and the
 * schema is exactly this build's; 200 when all three hold, 503 naming each that does not.
 */
import type { ServerResponse } from "node:http";
import type { Redis } from "ioredis";
import type { Pool } from "../store/db.js";
import { assertSchemaCurrent } from "../store/migrate.js";

export interface ReadinessDeps {
  pool: Pick<Pool, "query">;
  redis: Pick<Redis, "ping" | "status">;
  timeoutMs: number;
}

export interface ReadinessReport {
  ready: boolean;
  checks: { redis: string; postgres: string; schema: string };
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

async function check(work: () => Promise<unknown>, ms: number, what: string): Promise<string> {
  try {
    await withTimeout(work(), ms, what);
    return "ok";
  } catch (error) {
    return (error as Error).message || String(error);
  }
}

export async function readiness(deps: ReadinessDeps): Promise<ReadinessReport> {
  const [redis, postgres] = await Promise.all([
    // While disconnected, ioredis would queue the PING until it reconnects: answer from the connection state instead.
    deps.redis.status === "ready" ? check(() => deps.redis.ping(), deps.timeoutMs, "Redis") : Promise.resolve(`Redis is not connected (${deps.redis.status})`),
    check(() => deps.pool.query("SELECT 1"), deps.timeoutMs, "Postgres"),
  ]);
  const schema = postgres === "ok" ? await check(() => assertSchemaCurrent(deps.pool), deps.timeoutMs, "the schema check") : "not checked: Postgres is not reachable";
  return { ready: redis === "ok" && postgres === "ok" && schema === "ok", checks: { redis, postgres, schema } };
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
