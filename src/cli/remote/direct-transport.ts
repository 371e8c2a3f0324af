/**
 * The CLI's direct mode as a Connect transport: the gateway's own service handlers (gateway/routes.ts), run
 * in-process over connect-es's in-memory router transport, against a runtime this process opens. So direct and
 * remote mode are one client (remote-api.ts) and one implementation of the tenant API: the handlers.
 *
 * Who calls: an operator with database access, acting for `--tenant`. The interceptor below stands in for the
 * gateway's auth interceptor (gateway/auth.ts `setOperatorCall`): no key, the `cli` channel, the operator's
 * `--actor` recorded as said. What creates a tenant's data from nothing (a workflow, a task, …) needs the tenant
 * to exist — a mistyped `--tenant` must not quietly start a second tenant — while reads of an unknown tenant
 * find nothing, as direct mode always did.
 *
 * Connections: the runtime (Postgres and Redis: ServiceDeps carries the bus, Redis and the Watch hub) is opened on
 * the first call and closed by `close()`. Reads used to need only Postgres; they now need Redis to answer too, and
 * say so the way `task start` always has ("Redis at … is not answering (REDIS_URL)").
 */
import { createRouterTransport, type Interceptor, type Transport } from "@connectrpc/connect";
import { operatorActorOf, setOperatorAdminCall, setOperatorCall } from "../../gateway/auth.js";
import { resolveGatewayOptions } from "../../gateway/options.js";
import { registerServices } from "../../gateway/routes.js";
import { createServiceDeps, type ServiceParts } from "../../gateway/service-deps.js";
import { silentLogger } from "../../logger.js";
import type { Runtime } from "../../runtime.js";
import { requireTenantRecord } from "../../tenancy/tenants.js";
import { openRuntime, type CliContext } from "../context.js";
import { inProcessErrors } from "./in-process-errors.js";

/** The calls that create a tenant's data from nothing (`Service.Method`); each first checks the tenant exists. */
const CREATING = new Set(["WorkflowService.Submit", "TaskService.Start", "ConnectionService.Add", "ForeignAgentService.Register", "IngestService.Create"]);

/** The actor of a call whose request has no actor field, when the CLI named none (as `--actor` defaults). */
const DEFAULT_ACTOR = "cli";

/** How often Watch streams look at their tasks: direct mode's poll interval before it had Watch. */
const WATCH_INTERVAL_MS = 200;

export interface DirectTransport {
  transport: Transport;
  close(): Promise<void>;
}

/**
 * `tenant` undefined: a transport for AdminService calls (admin-api.ts), the operator acting as an admin for no
 * tenant; a tenant service called over it finds no tenant resolved (a wiring bug, INTERNAL).
 */
export function openDirectTransport(ctx: CliContext, tenant: string | undefined): DirectTransport {
  let opened: Promise<{ runtime: Runtime; parts: ServiceParts; transport: Transport }> | undefined;
  const open = () =>
    (opened ??= (async () => {
      const runtime = await openRuntime(ctx.config, { logger: silentLogger, poolSize: 2, longRunning: false, endpoints: ctx.endpoints });
      // `inline` starts: the engine runs in the start's transaction, as the CLI always started tasks (no
      // coordinator needs to be reading the shard inboxes for a task to begin).
      const parts = createServiceDeps(runtime, { ...resolveGatewayOptions({ starts: "inline" }), watchIntervalMs: WATCH_INTERVAL_MS });
      const operator: Interceptor = (next) => async (req) => {
        if (tenant === undefined) {
          // An `--actor` given empty stays empty, for the store to refuse as it always has (`flags set --actor ""`).
          setOperatorAdminCall(req.contextValues, operatorActorOf(req.header) ?? DEFAULT_ACTOR);
          return next(req);
        }
        if (CREATING.has(`${req.service.name}.${req.method.name}`)) await requireTenantRecord(runtime.stores.tenants, runtime.pool, tenant);
        setOperatorCall(req.contextValues, tenant, operatorActorOf(req.header) || DEFAULT_ACTOR);
        return next(req);
      };
      const errors = inProcessErrors();
      const transport = errors.wrap(createRouterTransport(registerServices(parts.deps), { router: { interceptors: [errors.server, operator] } }));
      return { runtime, parts, transport };
    })());

  // Opening waits for the first call; an open that fails (Postgres or Redis not answering) fails that call.
  const transport: Transport = {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      return (await open()).transport.unary(method, signal, timeoutMs, header, input, contextValues);
    },
    async stream(method, signal, timeoutMs, header, input, contextValues) {
      return (await open()).transport.stream(method, signal, timeoutMs, header, input, contextValues);
    },
  };

  return {
    transport,
    async close() {
      const done = await opened?.catch(() => undefined);
      if (!done) return;
      done.parts.stopStreams();
      done.parts.closeWatches();
      await done.runtime.close();
    },
  };
}
