/**
 * The Connect API as a Node request handler: the services (routes.ts) behind four interceptors, outermost first:
 * tracing (a span per call when tracing is on), errors (anything thrown becomes a ConnectError a person can act
 * on), metrics, auth (the API key or console session decides the caller and the tenant).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Metrics } from "../metrics/metrics.js";
import type { DependencyHealth } from "../process/dependency-health.js";
import type { Logger } from "../logger.js";
import type { Pool } from "../store/db.js";
import { createTracingInterceptor } from "../telemetry/api-spans.js";
import { createAuthInterceptor, resolvedTenant } from "./auth.js";
import type { SessionAuthOptions } from "./console/session-auth.js";
import { createErrorInterceptor } from "./errors.js";
import { createMetricsInterceptor } from "./request-metrics.js";
import { ADMIN_SERVICES, registerServices } from "./routes.js";
import type { ServiceDeps } from "./services/deps.js";

export interface ApiHandlerOptions {
  deps: ServiceDeps;
  /** Where the auth interceptor reads API keys (the owner's pool). */
  pool: Pool;
  logger: Logger;
  metrics: Pick<Metrics, "registry">;
  health?: DependencyHealth;
  /** Console sessions stand in for a bearer key; absent when the console is off. */
  sessions?: SessionAuthOptions;
  readMaxBytes: number;
}

export function createApiHandler(options: ApiHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { logger } = options;
  return connectNodeAdapter({
    routes: registerServices(options.deps),
    // Tracing outermost: its span covers the whole call and records the Connect code the caller gets.
    interceptors: [
      createTracingInterceptor({ tenantOf: resolvedTenant }),
      createErrorInterceptor(logger, options.health),
      createMetricsInterceptor(options.metrics.registry),
      createAuthInterceptor({ db: options.pool, keys: options.deps.stores.apiKeys, tenants: options.deps.stores.tenants, adminServices: ADMIN_SERVICES, ...(options.sessions ? { sessions: options.sessions } : {}) }),
    ],
    readMaxBytes: options.readMaxBytes,
    // A misspelt field (`idempotencyKy`) must not be silently dropped: it would quietly change what the call does.
    // Zeros and `false` are written out, so a curl user sees `"created": false` and `"attempts": 0`.
    jsonOptions: { ignoreUnknownFields: false, alwaysEmitImplicit: true },
  });
}
