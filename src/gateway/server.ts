/**
 * The gateway: one Node HTTP server for the Connect API (JSON and binary, so curl works), `/metrics`, `/healthz`,
 * `/readyz`, the console (`/console/`, console/), the signed approval links, the A2A callback route and any extra routes.
 *
 * Every RPC passes four interceptors, outermost first: tracing (a span per call when tracing is on), errors (anything
 * thrown becomes a ConnectError a person can act on), metrics, auth (the API key decides the caller and the tenant). Tenant services run under row-level
 * security: reads through `withTenantTransaction`, task operations through a TaskService built with
 * `transact: tenantScoped(pool)`.
 *
 * `close()` stops accepting connections, ends Watch streams, lets in-flight calls finish (up to `shutdownGraceMs`),
 * then cuts what is left. It does not close the runtime: its owner does, after the gateway.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { handleApprovalLink } from "../approvals/link-route.js";
import { handleA2ACallback } from "../foreign/callback-route.js";
import { EchoChecker } from "../ingest/echo.js";
import { SeenBodies } from "../ingest/seen-bodies.js";
import { EndpointCache } from "../ingest/endpoint-cache.js";
import { createIngestRoute } from "../ingest/ingest-route.js";
import { createBatchedTaskStarter } from "../ingest/task-starter.js";
import { GATEWAY_SENDER } from "../bus/auth/bus-keys.js";
import { StartBatcher } from "../tasks/start-batcher.js";
import { TaskService, type StartTaskRequest } from "../tasks/tasks.js";
import { collectMetrics, type MetricCollectors } from "../metrics/collect.js";
import type { Runtime } from "../runtime.js";
import { tenantScoped } from "../store/tenant-scope.js";
import { replyDeadlineMs } from "../replies/reply-limits.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { createSecretCipher } from "../vault/secret-cipher.js";
import { createAuthInterceptor, resolvedTenant } from "./auth.js";
import { createTracingInterceptor } from "../telemetry/api-spans.js";
import { createErrorInterceptor } from "./errors.js";
import { readiness, sendJson } from "./health.js";
import { resolveGatewayOptions, type ExtraRoute, type GatewayOptions } from "./options.js";
import { createMetricsInterceptor } from "./request-metrics.js";
import { WatchHub } from "./watch-hub.js";
import { ADMIN_SERVICES, registerServices } from "./routes.js";
import { foreignTransportsFor } from "../foreign/register-check.js";
import { checkShardCount } from "../coordinator/shard-leases.js";
import { isDatabaseUnavailable } from "../store/db.js";
import { createConsoleRoute } from "./console/console-route.js";
import { ConsoleSessionStore } from "./console/session-store.js";
import { SignInLimiter } from "./console/sign-in-limiter.js";
import { TrustedProxies } from "./client-address.js";

/** The parts of a runtime the gateway uses. */
export type GatewayRuntime = Pick<Runtime, "config" | "logger" | "metrics" | "pool" | "redis" | "bus" | "busAuth" | "engine" | "publisher" | "tasks"> &
  Partial<Pick<Runtime, "a2a" | "health">>;

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
  // Starts and foreign RESULTs go to shard inboxes by SWITCHYARD_SHARD_COUNT: with another count than the
  // coordinators recorded they would land in inboxes nobody reads. Postgres down: checked by nobody, logged.
  await checkShardCount(pool, runtime.config.shards.count).catch((error: unknown) => {
    if (!isDatabaseUnavailable(error)) throw error;
    logger.warn({ err: error }, "could not check SWITCHYARD_SHARD_COUNT against the recorded shard count: the database is unreachable");
  });
  const stopping = new AbortController();
  const tasks = new TaskService({
    pool,
    engine: runtime.engine,
    publisher: runtime.publisher,
    maxPayloadBytes: runtime.config.bus.maxPayloadBytes,
    transact: tenantScoped(pool),
    replyDeadlineMs: replyDeadlineMs(runtime.config),
    // Starts go to the tenant's shard owner as signed inbox envelopes: no engine run (nor audit row) in the gateway.
    ...(options.starts === "owner" ? { owner: { signer: runtime.busAuth.lazySigner(GATEWAY_SENDER), shardCount: runtime.config.shards.count } } : {}),
  });
  const starts = new StartBatcher<StartTaskRequest>({ tasks, request: (request) => request });
  const watches = new WatchHub({
    db: pool,
    intervalMs: options.watchIntervalMs,
    limits: { perTenant: options.watchMaxPerTenant, total: options.watchMaxStreams },
    logger,
  });
  // One cipher for the vault services and the ingest route (undefined without SWITCHYARD_SECRET_ENCRYPTION_KEY).
  const cipher = createSecretCipher(runtime.config.origin.encryptionKeys);
  const ingestEndpoints = new EndpointCache({ db: pool, cipher, ttlMs: options.ingestCacheTtlMs, logger });
  const consoleOn = options.console.enabled ?? true;
  const sessions = new ConsoleSessionStore({
    db: pool,
    idleMs: options.console.sessionIdleMs ?? runtime.config.gateway.consoleSessionIdleMs,
    maxMs: options.console.sessionMaxMs ?? runtime.config.gateway.consoleSessionMaxMs,
    ...(options.console.now ? { now: options.console.now } : {}),
  });
  const sessionAuth = { sessions, publicUrl: runtime.config.gateway.publicUrl };
  const connect = connectNodeAdapter({
    routes: registerServices({
      pool,
      cipher,
      ingestEndpoints,
      publicUrl: runtime.config.gateway.publicUrl,
      foreignTransports: runtime.a2a?.transports ?? foreignTransportsFor(runtime.config.foreign),
      ...(runtime.a2a ? { breakers: runtime.a2a.breakers } : {}),
      tasks,
      starts,
      bus: runtime.bus,
      redis: runtime.redis,
      keyPrefix: runtime.config.bus.keyPrefix,
      flagDefaults: runtime.config.flags,
      maxPayloadBytes: runtime.config.bus.maxPayloadBytes,
      logger,
      watches,
      stopping: stopping.signal,
    }),
    // Tracing outermost: its span covers the whole call and records the Connect code the caller gets.
    interceptors: [createTracingInterceptor({ tenantOf: resolvedTenant }), createErrorInterceptor(logger, runtime.health), createMetricsInterceptor(metrics.registry), createAuthInterceptor({ db: pool, adminServices: ADMIN_SERVICES, ...(consoleOn ? { sessions: sessionAuth } : {}) })],
    readMaxBytes: options.readMaxBytes,
    // A misspelt field (`idempotencyKy`) must not be silently dropped: it would quietly change what the call does.
    // Zeros and `false` are written out, so a curl user sees `"created": false` and `"attempts": 0`.
    jsonOptions: { ignoreUnknownFields: false, alwaysEmitImplicit: true },
  });

  let collectors: MetricCollectors | undefined;
  if (options.collectMetrics && !metrics.registry.getSingleMetric(SCRAPE_GAUGE)) {
    collectors = collectMetrics(metrics, { pool, bus: runtime.bus, redis: runtime.redis, keyPrefix: runtime.config.bus.keyPrefix, logger, health: runtime.health });
  }

  const routes: ExtraRoute[] = [];
  if (consoleOn) {
    const limiter = new SignInLimiter({ maxFailures: options.console.signInMaxFailures, windowMs: options.console.signInWindowMs });
    routes.push(createConsoleRoute({ db: pool, ...sessionAuth, limiter, trustedProxies, logger, ...(options.console.dirs ? { dirs: options.console.dirs } : {}) }));
  }
  // The link itself authorises the decision (signed, single use), so it is decided by the operator task service.
  if (options.approvalLinks) routes.push((req, res) => handleApprovalLink(req, res, { pool, tasks: runtime.tasks, logger }));
  // A2A push notifications: the signed URL token and the per-bridge notification token are the authorisation.
  const a2a = runtime.a2a;
  if (a2a) {
    routes.push(async (req, res) => {
      const handled = await handleA2ACallback(req, res, a2a.callback);
      if (handled) metrics.a2aCallbacks.inc({ status: String(res.statusCode) });
      return handled;
    });
  }
  // Provider webhooks: the endpoint's URL token names the tenant; each source's signature authorises the body.
  routes.push(
    createIngestRoute({
      db: pool,
      tasks: createBatchedTaskStarter(tasks),
      endpoints: ingestEndpoints,
      echoes: new EchoChecker(pool),
      seenBodies: new SeenBodies(pool),
      maxBodyBytes: runtime.config.origin.ingestMaxBodyBytes,
      metrics,
      logger,
    }),
  );
  routes.push(...options.routes);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" || req.method === "HEAD") {
      if (path === "/healthz") return sendJson(res, 200, { status: "ok" });
      if (path === "/readyz") {
        const report = await readiness({ pool, redis: runtime.redis, health: runtime.health, timeoutMs: options.readinessTimeoutMs });
        return sendJson(res, report.ready ? 200 : 503, report);
      }
      if (path === "/metrics") {
        const text = await metrics.registry.metrics();
        res.writeHead(200, { "content-type": metrics.registry.contentType, "cache-control": "no-store" });
        res.end(text);
        return;
      }
    }
    for (const route of routes) if (await route(req, res)) return;
    connect(req, res);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (runtime.health?.absorb(error)) {
        // Postgres or Redis is down: logged once per outage by the health tracker; the caller may retry.
        if (!res.headersSent) sendJson(res, 503, { error: "a backing service (Postgres or Redis) is unreachable; try again shortly" });
        else res.destroy();
        return;
      }
      // The path only: query strings carry signed tokens (approval links, callback URLs) that must not reach logs.
      logger.error({ err: error, path: (req.url ?? "").split("?")[0] }, "gateway route failed");
      if (!res.headersSent) sendJson(res, 500, { error: "internal error; the gateway log has the details" });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (error: Error) => reject(listenFailure(error, options.host, options.port));
    server.once("error", failed);
    server.listen(options.port, options.host, () => {
      server.off("error", failed);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = options.host === "0.0.0.0" || options.host === "::" ? "127.0.0.1" : options.host.includes(":") ? `[${options.host}]` : options.host;
  const url = `http://${shownHost}:${port}`;
  logger.info({ url, port, host: options.host }, "gateway listening");

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      stopping.abort();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive connections become idle as their last call finishes; close each as soon as it does.
      server.closeIdleConnections();
      const sweeper = setInterval(() => server.closeIdleConnections(), 25);
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          logger.warn({ graceMs: options.shutdownGraceMs }, "gateway requests still running after the grace period; closing their connections");
          server.closeAllConnections();
          resolve();
        }, options.shutdownGraceMs);
      });
      await Promise.race([closed, grace]);
      watches.close();
      clearTimeout(timer);
      clearInterval(sweeper);
      await closed;
      collectors?.unregister();
      logger.info("gateway stopped");
    })());
  return { server, watches, url, port, close };
}

/**
 * A port in use (or an interface the host lacks) is an operator's mistake, not a crash: say which address, and what
 * to do. `details.cause` keeps the socket error code for callers that retry on another port (the demo).
 */
function listenFailure(error: Error, host: string, port: number): Error {
  const code = (error as NodeJS.ErrnoException).code;
  const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  if (code === "EADDRINUSE") {
    return new SwitchyardError(ErrorCode.Unavailable, `the gateway cannot listen on ${where}: the port is in use; choose another with --port or SWITCHYARD_GATEWAY_PORT`, {
      cause: error,
      details: { cause: code, host, port },
    });
  }
  if (code === "EADDRNOTAVAIL" || code === "EACCES") {
    return new SwitchyardError(ErrorCode.Unavailable, `the gateway cannot listen on ${where} (${code}); check --host / SWITCHYARD_GATEWAY_HOST and --port / SWITCHYARD_GATEWAY_PORT`, {
      cause: error,
      details: { cause: code, host, port },
    });
  }
  return error;
}
