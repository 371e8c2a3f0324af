/**
 * Whether this process can reach Postgres and Redis, as the process itself experiences it: one object per process,
 * fed by connection events (a pool client lost or connected, ioredis closing or ready), by failed calls whose
 * error says "unreachable" (`absorb`) and by readiness probes.
 *
 * An outage is logged once when it starts ("postgres unreachable") and once when it ends ("postgres reachable again
 * after N ms"), both at warn so a warn-level log shows where each outage begins and ends; the calls that fail in
 * between log nothing above debug. Metrics: `switchyard_dependency_up`, `switchyard_dependency_outages_total` and
 * the `switchyard_dependency_outage_seconds` histogram (its `_count` is the number of recoveries).
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { isDatabaseUnavailable } from "../store/db.js";

export const DEPENDENCIES = ["postgres", "redis"] as const;
export type Dependency = (typeof DEPENDENCIES)[number];

export interface Outage {
  /** When the outage started (clock ms). */
  sinceMs: number;
  /** The error that started it, as text. */
  reason: string;
}

export interface DependencyHealthOptions {
  logger?: Logger;
  metrics?: Pick<Metrics, "dependencyUp" | "dependencyOutages" | "dependencyOutageSeconds">;
  clock?: () => number;
}

export class DependencyHealth {
  private readonly logger: Logger;
  private readonly clock: () => number;
  private readonly outages = new Map<Dependency, Outage>();
  /** When each dependency's last outage ended (clock ms). */
  private readonly recoveries = new Map<Dependency, number>();

  constructor(private readonly options: DependencyHealthOptions = {}) {
    this.logger = (options.logger ?? silentLogger).child({ component: "dependencies" });
    this.clock = options.clock ?? Date.now;
    for (const dependency of DEPENDENCIES) options.metrics?.dependencyUp.set({ dependency }, 1);
  }

  /** The dependency failed to answer: starts an outage (logged, counted) unless one is already on. */
  unreachable(dependency: Dependency, error: unknown): void {
    if (this.outages.has(dependency)) {
      this.logger.debug({ dependency, err: error }, `${dependency} still unreachable`);
      return;
    }
    const reason = describe(error);
    this.outages.set(dependency, { sinceMs: this.clock(), reason });
    this.options.metrics?.dependencyUp.set({ dependency }, 0);
    this.options.metrics?.dependencyOutages.inc({ dependency });
    this.logger.warn({ dependency, reason }, `${dependency} unreachable; retrying with backoff, not ready until it answers again`);
  }

  /**
   * The dependency answered (a connection was made, a probe succeeded): ends the outage, if there is one. `askedAtMs`
   * (this object's `now()` when the connect or probe began): an answer to a question asked before the outage began
   * proves nothing about now — a connection opened just before a fast restart completes after another one was
   * terminated — so it does not end the outage.
   */
  reachable(dependency: Dependency, askedAtMs?: number): void {
    const outage = this.outages.get(dependency);
    if (!outage) return;
    if (askedAtMs !== undefined && askedAtMs < outage.sinceMs) {
      this.logger.debug({ dependency }, `${dependency} answered a call made before the outage began; still unreachable`);
      return;
    }
    this.outages.delete(dependency);
    this.recoveries.set(dependency, this.clock());
    const outageMs = Math.max(0, this.clock() - outage.sinceMs);
    this.options.metrics?.dependencyUp.set({ dependency }, 1);
    this.options.metrics?.dependencyOutageSeconds.observe({ dependency }, outageMs / 1000);
    this.logger.warn({ dependency, outageMs }, `${dependency} reachable again after ${outageMs} ms`);
  }

  /**
   * For a loop's catch block: when `error` says a dependency is unreachable, records the outage and returns true
   * (the caller logs nothing above debug and backs off); otherwise returns false and the caller logs it as usual.
   */
  absorb(error: unknown): boolean {
    const dependency = unreachableDependencyOf(error);
    if (!dependency) return false;
    this.unreachable(dependency, error);
    return true;
  }

  /** This object's clock: what `reachable`'s `askedAtMs` is measured on. */
  now(): number {
    return this.clock();
  }

  /** The outage in progress, if any. */
  outage(dependency: Dependency): Outage | undefined {
    return this.outages.get(dependency);
  }

  /** When the dependency's last outage ended (this object's clock), or undefined if none has, here. */
  lastRecoveryMs(dependency: Dependency): number | undefined {
    return this.recoveries.get(dependency);
  }

  isReachable(dependency: Dependency): boolean {
    return !this.outages.has(dependency);
  }
}

/** Exponential backoff for a loop whose dependency is down: 200 ms, 400 ms, … capped at `maxMs`. */
export function outageBackoffMs(failures: number, maxMs = 5_000, baseMs = 200): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.min(failures - 1, 16)));
}

/** Messages ioredis gives to commands when the connection, not the command, is the problem. */
const REDIS_UNAVAILABLE = /^(Connection is closed|Reached the max retries per request limit|Stream isn't writeable|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|READONLY You can't write against a read only replica)/;
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EPIPE"]);

/**
 * Which dependency an error says is unreachable, if any. A bus call's SwitchyardError (UNAVAILABLE, "bus … failed")
 * wrapping a socket or ioredis connection error is Redis; ioredis's own connection messages are Redis; what
 * `isDatabaseUnavailable` recognises (pg's connection errors, SQLSTATE 08/53/57P0x, a socket error raised on one of
 * our pools' connections) is Postgres. A bare socket error from anywhere else (a handler's own HTTP call, a foreign
 * agent, stdout) is none of them.
 *
 * The `cause` chain is followed through plain errors and through an UNAVAILABLE SwitchyardError (e.g. "cannot read
 * the schema version"), never through a SwitchyardError with another code: that one already says what went wrong
 * (a foreign agent's card unreachable is FAILED_PRECONDITION about that agent, not an outage of ours).
 */
export function unreachableDependencyOf(error: unknown): Dependency | undefined {
  // Already named (service-endpoints.ts: "Redis at host:port is not answering (REDIS_URL)").
  if (error instanceof SwitchyardError && error.code === ErrorCode.Unavailable && isDependency(error.details.dependency)) return error.details.dependency;
  if (error instanceof SwitchyardError && error.code === ErrorCode.Unavailable && error.message.startsWith("bus ")) {
    return isRedisConnectionError(error.cause, true) ? "redis" : undefined;
  }
  if (error instanceof SwitchyardError && error.code !== ErrorCode.Unavailable) return undefined;
  if (isRedisConnectionError(error, false)) return "redis";
  if (isDatabaseUnavailable(error)) return "postgres";
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== error ? unreachableDependencyOf(cause) : undefined;
}

function isDependency(value: unknown): value is Dependency {
  return (DEPENDENCIES as readonly unknown[]).includes(value);
}

/** `sockets`: a bare socket error counts too (only where the call is known to be a Redis call). */
function isRedisConnectionError(error: unknown, sockets: boolean): boolean {
  const e = error as { name?: unknown; message?: unknown; code?: unknown } | null | undefined;
  if (!e || typeof e !== "object") return false;
  if (e.name === "MaxRetriesPerRequestError") return true;
  if (typeof e.message === "string" && REDIS_UNAVAILABLE.test(e.message)) return true;
  return sockets && typeof e.code === "string" && SOCKET_CODES.has(e.code);
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
