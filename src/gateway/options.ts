/**
 * Gateway settings. The CLI fills them from `config.gateway` (SWITCHYARD_GATEWAY_HOST / _PORT / _MAX_BODY_BYTES)
 * or its flags; code may pass them directly.
 */
import { defaultConfig } from "../config/index.js";

export interface GatewayOptions {
  /** TCP port; 0 picks a free one (tests). @defaultValue 8080 */
  port?: number;
  /** Interface to listen on. @defaultValue "127.0.0.1" (loopback, like `config.gateway.host`; every interface only when asked) */
  host?: string;
  /** Largest request message accepted, in bytes; larger bodies answer RESOURCE_EXHAUSTED. @defaultValue 1 MiB */
  readMaxBytes?: number;
  /** How often the shared Watch poller checks the watched tasks (ms). @defaultValue 250 */
  watchIntervalMs?: number;
  /** Watch streams one tenant may have open at once; one more is RESOURCE_EXHAUSTED. @defaultValue 32 */
  watchMaxPerTenant?: number;
  /** Watch streams the gateway serves at once, all tenants together. @defaultValue 512 */
  watchMaxStreams?: number;
  /** How long in-flight requests may finish after `close()` before connections are cut (ms). @defaultValue 10 000 */
  shutdownGraceMs?: number;
  /** Time limit of each /readyz probe (ms). @defaultValue 2000 */
  readinessTimeoutMs?: number;
  /** Register the scrape-time gauges (queues, approvals, flags, budgets…) on the metrics registry. @defaultValue true */
  collectMetrics?: boolean;
  /** Serve the signed approval links (`/approvals/decide`). @defaultValue true */
  approvalLinks?: boolean;
  /**
   * More HTTP routes, tried in order before the Connect API: each answers true when it handled the request
   * (e.g. the FOREIGN callback route).
   */
  routes?: readonly ExtraRoute[];
  /** How long the ingest route trusts a cached endpoint (and its opened secret) before reading it again (ms). @defaultValue 5000 */
  ingestCacheTtlMs?: number;
  /**
   * How StartTask and the ingest route start tasks: `owner` writes the task and a `task_started` envelope for the
   * tenant's shard owner (a coordinator applies it); `inline` runs the engine in the start's own transaction, for
   * setups with no coordinator reading shard inboxes (README, "Task starts"). @defaultValue "owner"
   */
  starts?: "owner" | "inline";
  /** The console under `/console` (README, "Console"). */
  console?: ConsoleOptions;
}

export interface ConsoleOptions {
  /** Serve the console and accept its session cookies. @defaultValue true */
  enabled?: boolean;
  /** Where the built console is looked for. @defaultValue `dist/console/` of the package */
  dirs?: readonly string[];
  /** Session idle expiry (ms). @defaultValue config.gateway.consoleSessionIdleMs */
  sessionIdleMs?: number;
  /** Session absolute expiry (ms). @defaultValue config.gateway.consoleSessionMaxMs */
  sessionMaxMs?: number;
  /** The sessions' clock (tests). @defaultValue Date.now */
  now?: () => number;
  /** Failed sign-ins per source address within `signInWindowMs` before 429. @defaultValue 10 */
  signInMaxFailures?: number;
  /** @defaultValue 5 minutes */
  signInWindowMs?: number;
  /**
   * Proxies (IP addresses and CIDRs) whose `X-Forwarded-For` names the client sign-in failures are counted against
   * (gateway/client-address.ts); empty: the header is ignored. @defaultValue config.gateway.trustedProxies
   */
  trustedProxies?: readonly string[];
}

export type ExtraRoute = (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => Promise<boolean>;

export const DEFAULT_GATEWAY_PORT = 8080;
export const DEFAULT_GATEWAY_HOST = "127.0.0.1";
export const DEFAULT_READ_MAX_BYTES = 1024 * 1024;

export interface ResolvedGatewayOptions {
  port: number;
  host: string;
  readMaxBytes: number;
  watchIntervalMs: number;
  watchMaxPerTenant: number;
  watchMaxStreams: number;
  shutdownGraceMs: number;
  readinessTimeoutMs: number;
  collectMetrics: boolean;
  approvalLinks: boolean;
  routes: readonly ExtraRoute[];
  ingestCacheTtlMs: number;
  starts: "owner" | "inline";
  console: ConsoleOptions;
}

export function resolveGatewayOptions(options: GatewayOptions = {}): ResolvedGatewayOptions {
  return {
    port: options.port ?? DEFAULT_GATEWAY_PORT,
    host: options.host ?? DEFAULT_GATEWAY_HOST,
    readMaxBytes: options.readMaxBytes ?? DEFAULT_READ_MAX_BYTES,
    watchIntervalMs: options.watchIntervalMs ?? 250,
    watchMaxPerTenant: options.watchMaxPerTenant ?? defaultConfig.gateway.watchMaxPerTenant,
    watchMaxStreams: options.watchMaxStreams ?? defaultConfig.gateway.watchMaxStreams,
    shutdownGraceMs: options.shutdownGraceMs ?? 10_000,
    readinessTimeoutMs: options.readinessTimeoutMs ?? 2_000,
    collectMetrics: options.collectMetrics ?? true,
    approvalLinks: options.approvalLinks ?? true,
    routes: options.routes ?? [],
    ingestCacheTtlMs: options.ingestCacheTtlMs ?? 5000,
    starts: options.starts ?? "owner",
    console: options.console ?? {},
  };
}
