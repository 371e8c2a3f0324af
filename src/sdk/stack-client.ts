/**
 * The test stack's `client`: the real `switchyard/client` service clients over an in-process Connect transport
 * (`createRouterTransport`) to the gateway's own services (`registerServices`, on the ServiceDeps the gateway
 * builds: src/gateway/service-deps.ts), behind the gateway's error and auth interceptors. The stack's tenant is
 * created with an API key, and every call carries that key as a bearer token, so a call resolves its tenant, runs
 * under row-level security, records its actor (`apikey:test-stack`) and decides approvals `via: api` exactly as a
 * call to a deployed gateway does — only without the HTTP server. Starts go to the shard owner (the stack's
 * coordinator), as the gateway's do by default.
 *
 * Internal to the SDK: testing.ts exports the client, not this module.
 */
import { createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { createAuthInterceptor } from "../gateway/auth.js";
import { createErrorInterceptor } from "../gateway/errors.js";
import { resolveGatewayOptions } from "../gateway/options.js";
import { ADMIN_SERVICES, registerServices } from "../gateway/routes.js";
import { createServiceDeps } from "../gateway/service-deps.js";
import type { Runtime } from "../runtime.js";
import { createTenantWithKey } from "../tenancy/bootstrap.js";
import type { SwitchyardClient } from "./client.js";
import { createServiceClients } from "./service-clients.js";

/** The name of the API key the stack's client calls with: actors are recorded as `apikey:test-stack`. */
export const STACK_KEY_NAME = "test-stack";

export interface StackClient {
  client: SwitchyardClient;
  /** Ends open Watch streams and stops the Watch hub's poller. */
  close(): void;
}

/** Creates the stack's tenant and its key, and a client that calls the gateway's services in process with it. */
export async function createStackClient(runtime: Runtime, orgId: string): Promise<StackClient> {
  const { apiKey } = await createTenantWithKey(runtime.stores, runtime.pool, { orgId, name: `Test stack tenant ${orgId}`, keyName: STACK_KEY_NAME });
  const options = resolveGatewayOptions({ watchIntervalMs: 50 });
  const parts = createServiceDeps(runtime, options);
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${apiKey.secret}`);
    return next(req);
  };
  const transport = createRouterTransport(registerServices(parts.deps), {
    router: {
      interceptors: [createErrorInterceptor(runtime.logger, runtime.health), createAuthInterceptor({ db: runtime.pool, keys: runtime.stores.apiKeys, tenants: runtime.stores.tenants, adminServices: ADMIN_SERVICES })],
      readMaxBytes: options.readMaxBytes,
    },
    transport: { interceptors: [bearer], useBinaryFormat: true },
  });
  return {
    client: { ...createServiceClients(transport), transport },
    close() {
      parts.stopStreams();
      parts.closeWatches();
    },
  };
}
