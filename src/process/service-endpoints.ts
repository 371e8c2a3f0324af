/**
 * Names the service behind a connection failure: "PostgreSQL at 127.0.0.1:5499 is not answering (DATABASE_URL)".
 * A bare `connect ECONNREFUSED 127.0.0.1:5499` tells an operator neither which of our two services it was nor
 * which setting to fix; this says both, and never prints the URL's password (only host and port are shown).
 *
 * The error carries `details.dependency`, so start-up that waits out an unreachable dependency
 * (dependency-wait.ts, via `unreachableDependencyOf`) still recognises it.
 */
import { unreachableDependencyOf, type Dependency } from "./dependency-health.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { parseRedisUrl } from "../bus/redis-url.js";

export interface ServiceEndpoint {
  dependency: Dependency;
  /** host:port (or a cluster's seed list), never credentials. */
  address: string;
  /** Where the URL came from: an environment variable (`DATABASE_URL`) or a CLI flag (`--database-url`). */
  variable: string;
}

export interface ServiceEndpoints {
  postgres: ServiceEndpoint;
  redis: ServiceEndpoint;
}

const SERVICE_NAMES: Record<Dependency, string> = { postgres: "PostgreSQL", redis: "Redis" };

export function postgresEndpoint(url: string, variable = "DATABASE_URL"): ServiceEndpoint {
  return { dependency: "postgres", address: postgresAddress(url), variable };
}

export function redisEndpoint(url: string, variable = "REDIS_URL"): ServiceEndpoint {
  return { dependency: "redis", address: redisAddress(url), variable };
}

/** Both endpoints of a configuration, named after the environment variables (the CLI passes its flags' names). */
export function endpointsOf(config: { databaseUrl: string; redisUrl: string }, variables: Partial<Record<Dependency, string>> = {}): ServiceEndpoints {
  return { postgres: postgresEndpoint(config.databaseUrl, variables.postgres), redis: redisEndpoint(config.redisUrl, variables.redis) };
}

/** UNAVAILABLE: "Redis at 127.0.0.1:6399 is not answering (REDIS_URL)", keeping the low-level error as `cause`. */
export function notAnswering(endpoint: ServiceEndpoint, cause: unknown): SwitchyardError {
  const why = causeText(cause);
  return new SwitchyardError(
    ErrorCode.Unavailable,
    `${SERVICE_NAMES[endpoint.dependency]} at ${endpoint.address} is not answering (${endpoint.variable})${why ? `: ${why}` : ""}`,
    { cause, details: { dependency: endpoint.dependency, address: endpoint.address, variable: endpoint.variable } },
  );
}

/**
 * Runs `probe` (a first query, a connect); when it fails because `endpoint`'s service is unreachable, throws
 * `notAnswering` instead. Any other failure (bad credentials, a missing database) passes through unchanged.
 */
export async function whenAnswering<T>(endpoint: ServiceEndpoint, probe: () => Promise<T>): Promise<T> {
  try {
    return await probe();
  } catch (error) {
    throw nameIfUnreachable(endpoint, error);
  }
}

/**
 * `error` as `notAnswering` when it says `endpoint`'s service is unreachable, else unchanged. The probe is known to
 * talk to that service, so a bare socket error (ioredis' first connect, pg's AggregateError of several addresses)
 * counts as well.
 */
export function nameIfUnreachable(endpoint: ServiceEndpoint, error: unknown): unknown {
  if (error instanceof SwitchyardError && error.details.dependency !== undefined) return error;
  const dependency = unreachableDependencyOf(error);
  if (dependency === endpoint.dependency || (dependency === undefined && socketCode(error) !== "")) return notAnswering(endpoint, error);
  return error;
}

function postgresAddress(url: string): string {
  try {
    const parsed = new URL(url);
    // libpq also takes the host from `?host=` (a Unix socket directory) when the authority has none.
    const host = parsed.hostname || parsed.searchParams.get("host") || "localhost";
    return `${host}:${parsed.port || "5432"}`;
  } catch {
    return "(unparsable URL)";
  }
}

function redisAddress(url: string): string {
  try {
    const target = parseRedisUrl(url);
    if (target.kind === "cluster") return `cluster ${target.nodes.map((n) => `${n.host}:${n.port}`).join(",")}`;
    const parsed = new URL(url);
    return `${parsed.hostname || "127.0.0.1"}:${parsed.port || "6379"}`;
  } catch {
    return "(unparsable URL)";
  }
}

/** The socket-level reason in a few words (`ECONNREFUSED`), never a message that might echo the URL. */
function causeText(cause: unknown): string {
  return socketCode(cause);
}

const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EPIPE"]);

/** The socket error code of `error` or of the first of its `errors` (pg tries every resolved address), else "". */
function socketCode(error: unknown): string {
  const e = error as { code?: unknown; errors?: unknown } | null | undefined;
  if (typeof e?.code === "string" && SOCKET_CODES.has(e.code)) return e.code;
  const inner = Array.isArray(e?.errors) ? (e.errors[0] as { code?: unknown } | undefined) : undefined;
  return typeof inner?.code === "string" && SOCKET_CODES.has(inner.code) ? inner.code : "";
}
