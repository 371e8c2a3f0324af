/**
 * The gateway: one Node HTTP server for the Connect API (JSON and binary, so curl works), `/metrics`, `/healthz`,
 * `/readyz`, the console (`/console/`, console/), the signed approval links, the A2A callback route and any extra routes.
 *
 * Its parts: what the services run against (service-deps.ts), the Connect API with its interceptors
 * (api-handler.ts), the other routes and the request listener (http-routes.ts), listening and the graceful stop
 * (listener.ts). Tenant services run under row-level security: reads through `withTenantTransaction`, task
 * operations through a TaskService built with `transact: tenantScoped(pool)`.
 *
 * `close()` stops accepting connections, ends Watch streams, lets in-flight calls finish (up to `shutdownGraceMs`),
 * then cuts what is left. It does not close the runtime: its owner does, after the gateway.
 */
import { createServer, type Server } from "node:http";
import { checkShardCount } from "../store/shards/postgres-shard-store.js";
import { collectMetrics, type MetricCollectors } from "../metrics/collect.js";
import { isDatabaseUnavailable } from "../store/db.js";
import { createApiHandler } from "./api-handler.js";
import { TrustedProxies } from "./client-address.js";
import { ConsoleSessionStore } from "./console/session-store.js";
import { createRequestListener, gatewayRoutes } from "./http-routes.js";
import { closeGracefully, listen } from "./listener.js";
import { resolveGatewayOptions, type GatewayOptions, type ResolvedGatewayOptions } from "./options.js";
import { createServiceDeps, type GatewayRuntime } from "./service-deps.js";
import type { WatchHub } from "./watch-hub.js";

export type { GatewayRuntime } from "./service-deps.js";

export interface Gateway {
  server: Server;
  /** The open Watch streams (counts per tenant and in total). */
  watches: Pick<WatchHub, "counts">;
  /** Where clients reach it, e.g. `http://127.0.0.1:8080` (loopback when listening on every interface). */
  url: string;
  port: number;
  /** Graceful stop; idempotent. */
  close(): Promise<void>;
}

/** A gauge set the CHECKPOINTS work registers on a registry; a second gateway on the same registry reuses it. */
const SCRAPE_GAUGE = "switchyard_approvals_pending";

export async function startGateway(runtime: GatewayRuntime, gatewayOptions: GatewayOptions = {}): Promise<Gateway> {
  const options = resolveGatewayOptions(gatewayOptions);
  const { logger, metrics, pool } = runtime;
  // First: a bad entry passed in code (config was checked when loaded) fails before anything is started.
  const trustedProxies = new TrustedProxies(options.console.trustedProxies ?? runtime.config.gateway.trustedProxies);
  await checkShardCountOrWarn(runtime);
  const parts = createServiceDeps(runtime, options);
  const consoleAuth = (options.console.enabled ?? true) ? { sessionAuth: consoleSessions(runtime, options), trustedProxies } : undefined;
  const api = createApiHandler({
    deps: parts.deps,
    pool,
    logger,
    metrics,
    ...(runtime.health ? { health: runtime.health } : {}),
    ...(consoleAuth ? { sessions: consoleAuth.sessionAuth } : {}),
    readMaxBytes: options.readMaxBytes,
  });

  let collectors: MetricCollectors | undefined;
  if (options.collectMetrics && !metrics.registry.getSingleMetric(SCRAPE_GAUGE)) {
    collectors = collectMetrics(metrics, { pool, bus: runtime.bus, redis: runtime.redis, keyPrefix: runtime.config.bus.keyPrefix, logger, health: runtime.health, store: runtime.stores.metricReads });
  }

  const routes = gatewayRoutes(runtime, parts, options, consoleAuth);
  const server = createServer(createRequestListener(runtime, routes, api, options));
  const { port, url } = await listen(server, options.host, options.port);
  logger.info({ url, port, host: options.host }, "gateway listening");

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      parts.stopStreams();
      await closeGracefully(server, { graceMs: options.shutdownGraceMs, logger, onDrained: parts.closeWatches });
      collectors?.unregister();
      logger.info("gateway stopped");
    })());
  return { server, watches: parts.watches, url, port, close };
}

/**
 * Starts and foreign RESULTs go to shard inboxes by SWITCHYARD_SHARD_COUNT: with another count than the
 * coordinators recorded they would land in inboxes nobody reads. Postgres down: checked by nobody, logged.
 */
async function checkShardCountOrWarn(runtime: GatewayRuntime): Promise<void> {
  await checkShardCount(runtime.pool, runtime.config.shards.count).catch((error: unknown) => {
    if (!isDatabaseUnavailable(error)) throw error;
    runtime.logger.warn({ err: error }, "could not check SWITCHYARD_SHARD_COUNT against the recorded shard count: the database is unreachable");
  });
}

/** The console's sessions, which the auth interceptor accepts in place of a bearer key. */
function consoleSessions(runtime: GatewayRuntime, options: ResolvedGatewayOptions): { sessions: ConsoleSessionStore; publicUrl: string } {
  const sessions = new ConsoleSessionStore({
    db: runtime.pool,
    store: runtime.stores.sessions,
    idleMs: options.console.sessionIdleMs ?? runtime.config.gateway.consoleSessionIdleMs,
    maxMs: options.console.sessionMaxMs ?? runtime.config.gateway.consoleSessionMaxMs,
    ...(options.console.now ? { now: options.console.now } : {}),
  });
  return { sessions, publicUrl: runtime.config.gateway.publicUrl };
}
