/**
 * What the gateway's HTTP server answers besides nothing: the probes (`/healthz`, `/readyz`), `/metrics`, then the
 * routes that authorise themselves (console, signed approval links, A2A callbacks, provider webhooks, any extra
 * routes), and last the Connect API. A route that throws answers 503 when Postgres or Redis is down (the caller
 * may retry), else 500 with the details in the log only.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { handleApprovalLink } from "../approvals/link-route.js";
import { handleA2ACallback } from "../foreign/callback-route.js";
import { EchoChecker } from "../ingest/echo.js";
import { createIngestRoute } from "../ingest/ingest-route.js";
import { SeenBodies } from "../ingest/seen-bodies.js";
import { createBatchedTaskStarter } from "../ingest/task-starter.js";
import type { TrustedProxies } from "./client-address.js";
import { createConsoleRoute } from "./console/console-route.js";
import type { SessionAuthOptions } from "./console/session-auth.js";
import { SignInLimiter } from "./console/sign-in-limiter.js";
import { readiness, sendJson } from "./health.js";
import type { ExtraRoute, ResolvedGatewayOptions } from "./options.js";
import type { GatewayRuntime, ServiceParts } from "./service-deps.js";

/** The self-authorising routes, in the order they are tried. */
export function gatewayRoutes(
  runtime: GatewayRuntime,
  parts: Pick<ServiceParts, "tasks" | "ingestEndpoints">,
  options: ResolvedGatewayOptions,
  consoleAuth: { sessionAuth: SessionAuthOptions; trustedProxies: TrustedProxies } | undefined,
): ExtraRoute[] {
  const { logger, metrics, pool } = runtime;
  const routes: ExtraRoute[] = [];
  if (consoleAuth) {
    const limiter = new SignInLimiter({ maxFailures: options.console.signInMaxFailures, windowMs: options.console.signInWindowMs });
    routes.push(createConsoleRoute({ db: pool, keys: runtime.stores.apiKeys, ...consoleAuth.sessionAuth, limiter, trustedProxies: consoleAuth.trustedProxies, logger, ...(options.console.dirs ? { dirs: options.console.dirs } : {}) }));
  }
  // The link itself authorises the decision (signed, single use), so it is decided by the operator task service.
  if (options.approvalLinks) routes.push((req, res) => handleApprovalLink(req, res, { pool, stores: runtime.stores, tasks: runtime.tasks, logger }));
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
      deliveries: runtime.stores.ingestDeliveries,
      tasks: createBatchedTaskStarter(parts.tasks, { deliveries: runtime.stores.ingestDeliveries }),
      endpoints: parts.ingestEndpoints,
      echoes: new EchoChecker(pool, { store: runtime.stores.echoes }),
      seenBodies: new SeenBodies(runtime.stores.ingestDeliveries, pool),
      maxBodyBytes: runtime.config.origin.ingestMaxBodyBytes,
      metrics,
      logger,
    }),
  );
  routes.push(...options.routes);
  return routes;
}

/** The server's request listener: probes and metrics first, then `routes`, then `api`. */
export function createRequestListener(
  runtime: GatewayRuntime,
  routes: readonly ExtraRoute[],
  api: (req: IncomingMessage, res: ServerResponse) => void,
  options: Pick<ResolvedGatewayOptions, "readinessTimeoutMs">,
): (req: IncomingMessage, res: ServerResponse) => void {
  const { logger, metrics, pool } = runtime;
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
    api(req, res);
  }

  return (req, res) => {
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
  };
}
