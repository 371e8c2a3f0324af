/**
 * Which PostgreSQL and Redis a process uses (issue 12 §5), decided once at start-up:
 *
 * 1. An explicit DATABASE_URL / REDIS_URL is used as it is, never replaced: when it does not answer, that is an
 *    error naming the variable (`unreachable: "fail"`) or left to the runtime's wait for dependencies (`"wait"`).
 * 2. Otherwise a server answering on the default address (127.0.0.1:5432 / :6379) is used.
 * 3. Otherwise, unless SWITCHYARD_EMBEDDED_SERVICES=off, this process starts its own: an embedded PostgreSQL and
 *    the installed redis-server, with their data under SWITCHYARD_DATA_DIR; without redis-server, one line says
 *    how to get Redis.
 *
 * The caller builds its runtime from the returned config (the resolved URLs) and stops the services last.
 */
import { isAbsolute, relative, resolve } from "node:path";
import type { Config } from "../config/index.js";
import { parseRedisUrl, redactRedisUrl } from "../bus/redis-url.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { startEmbeddedPostgres } from "./embedded-postgres.js";
import { existingService, hostPort } from "./existing-service.js";
import { describeService, type LocalService } from "./local-service.js";
import { addressOf, answers } from "./probe.js";
import { startRedisServer } from "./redis-server.js";

const POSTGRES_PORT = 5432;
const REDIS_PORT = 6379;

export interface ResolveLocalServicesOptions {
  config: Config;
  /** A relative SWITCHYARD_DATA_DIR is under this folder. */
  cwd: string;
  /**
   * When a server cannot be had: `fail` says which and how to fix it (the demo); `wait` leaves an explicit or
   * default address in place for the runtime to wait for (long-running processes, whose dependencies may come up
   * after them). @defaultValue "fail"
   */
  unreachable?: "fail" | "wait";
  /** `scratch` for throw-away clusters (the test run). @defaultValue "full" */
  durability?: "full" | "scratch";
  /** @defaultValue 100 */
  maxConnections?: number;
  /** How long a connect to a default or explicit address may take before it counts as "nothing answers". @defaultValue 1 000 */
  probeTimeoutMs?: number;
  /** Where to look for `redis-server` (PATH syntax). @defaultValue process.env.PATH */
  searchPath?: string;
  signal?: AbortSignal;
}

export interface ResolvedServices {
  /** `options.config` with the URLs the runtime must use. */
  config: Config;
  postgres: LocalService;
  redis: LocalService;
  /** One line per service, for the demo and `start all` to print. */
  lines: string[];
  /** Stops whatever this process started (Redis and PostgreSQL at once). Idempotent; never throws. */
  stop(): Promise<void>;
}

export async function resolveLocalServices(options: ResolveLocalServicesOptions): Promise<ResolvedServices> {
  const { config } = options;
  const dataDir = resolve(options.cwd, config.services.dataDir);
  const displayDir = isAbsolute(config.services.dataDir) ? config.services.dataDir : relative(options.cwd, dataDir) || ".";
  const probe = { timeoutMs: options.probeTimeoutMs ?? 1_000, ...(options.signal ? { signal: options.signal } : {}) };
  const unreachable = options.unreachable ?? "fail";
  const embedded = config.services.embedded === "auto";
  const started: LocalService[] = [];
  try {
    const postgres = await (async (): Promise<LocalService> => {
      const address = addressOf(config.databaseUrl, POSTGRES_PORT);
      const where = hostPort(config.databaseUrl, POSTGRES_PORT);
      if (config.services.databaseUrlSet) {
        if (unreachable === "fail" && !(await answers(address.host, address.port, probe))) throw explicitDown("DATABASE_URL", where);
        return existingService("PostgreSQL", config.databaseUrl, `DATABASE_URL (${where})`);
      }
      if (await answers(address.host, address.port, probe)) return existingService("PostgreSQL", config.databaseUrl, `local server at ${where}`);
      if (!embedded) return nothingAnswers("PostgreSQL", config.databaseUrl, where, "DATABASE_URL", unreachable);
      const service = await startEmbeddedPostgres({
        dataDir,
        displayDir,
        database: new URL(config.databaseUrl).pathname.slice(1) || "switchyard",
        ...(options.durability ? { durability: options.durability } : {}),
        ...(options.maxConnections ? { maxConnections: options.maxConnections } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      started.push(service);
      return service;
    })();
    const redis = await (async (): Promise<LocalService> => {
      if (config.services.redisUrlSet) {
        const target = parseRedisUrl(config.redisUrl);
        const nodes = target.kind === "single" ? [addressOf(target.url, REDIS_PORT)] : target.nodes;
        const shown = nodes.map((n) => `${n.host}:${n.port}`).join(",");
        if (unreachable === "fail") {
          const any = await Promise.all(nodes.map((n) => answers(n.host, n.port, probe)));
          if (!any.includes(true)) throw explicitDown("REDIS_URL", redactRedisUrl(shown));
        }
        return existingService("Redis", config.redisUrl, `REDIS_URL (${shown})`);
      }
      const address = addressOf(config.redisUrl, REDIS_PORT);
      const where = `${address.host}:${address.port}`;
      if (await answers(address.host, address.port, probe)) return existingService("Redis", config.redisUrl, `local server at ${where}`);
      if (!embedded) return nothingAnswers("Redis", config.redisUrl, where, "REDIS_URL", unreachable);
      const service = await startRedisServer({ dataDir, displayDir, ...(options.searchPath !== undefined ? { searchPath: options.searchPath } : {}), ...(options.signal ? { signal: options.signal } : {}) });
      started.push(service);
      return service;
    })();
    let stopping: Promise<void> | undefined;
    return {
      config: { ...config, databaseUrl: postgres.url, redisUrl: redis.url },
      postgres,
      redis,
      lines: [describeService(postgres), describeService(redis)],
      stop() {
        stopping ??= Promise.all([redis.stop(), postgres.stop()]).then(() => {});
        return stopping;
      },
    };
  } catch (error) {
    await Promise.all(started.map((s) => s.stop()));
    throw error;
  }
}

function explicitDown(variable: string, where: string): SwitchyardError {
  return new SwitchyardError(
    ErrorCode.Unavailable,
    `nothing answers at ${where} (${variable}): start that server, or unset ${variable} to use a local or embedded one (an explicit URL is never replaced)`,
    { details: { variable, address: where } },
  );
}

function nothingAnswers(service: "PostgreSQL" | "Redis", url: string, where: string, variable: string, unreachable: "fail" | "wait"): LocalService {
  if (unreachable === "fail") {
    throw new SwitchyardError(
      ErrorCode.Unavailable,
      `${service}: nothing answers at ${where} and SWITCHYARD_EMBEDDED_SERVICES=off: start ${service} there or set ${variable}`,
      { details: { variable: "SWITCHYARD_EMBEDDED_SERVICES", address: where } },
    );
  }
  return existingService(service, url, `nothing answers at ${where} yet (SWITCHYARD_EMBEDDED_SERVICES=off): waiting for it`);
}
