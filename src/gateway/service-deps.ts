/**
 * The ServiceDeps of the Connect services, built from a runtime: the one place that decides what the handlers run
 * against, shared by the gateway (server.ts) and the CLI's direct mode, which runs the same handlers in-process
 * (src/cli/remote/direct-transport.ts). What it builds beyond the runtime (a tenant-scoped TaskService, the start
 * batcher, the Watch hub, the vault cipher, the ingest endpoint cache) is returned too: the gateway's routes share
 * them, and `stop()` ends what would otherwise keep running (open Watch streams, the Watch poller).
 */
import { GATEWAY_SENDER } from "../bus/auth/bus-keys.js";
import { foreignTransportsFor } from "../foreign/register-check.js";
import { EndpointCache } from "../ingest/endpoint-cache.js";
import { replyDeadlineMs } from "../replies/reply-limits.js";
import type { Runtime } from "../runtime.js";
import { tenantScoped } from "../store/tenant-scope.js";
import { StartBatcher } from "../tasks/start-batcher.js";
import { TaskService, type StartTaskRequest } from "../tasks/tasks.js";
import { createSecretCipher, type SecretCipher } from "../vault/secret-cipher.js";
import type { ServiceDeps } from "./services/deps.js";
import { WatchHub } from "./watch-hub.js";

/** The parts of a runtime the gateway uses. */
export type GatewayRuntime = Pick<Runtime, "config" | "logger" | "metrics" | "pool" | "redis" | "bus" | "busAuth" | "engine" | "publisher" | "tasks" | "stores"> &
  Partial<Pick<Runtime, "a2a" | "health" | "flagsChanged">>;

export interface ServiceDepsOptions {
  /** `owner`: starts go to the tenant's shard owner; `inline`: the engine runs in the start's transaction (see GatewayOptions.starts). */
  starts: "owner" | "inline";
  watchIntervalMs: number;
  watchMaxPerTenant: number;
  watchMaxStreams: number;
  ingestCacheTtlMs: number;
}

export interface ServiceParts {
  deps: ServiceDeps;
  /** The tenant-scoped task service the handlers use (the ingest route starts tasks through it too). */
  tasks: TaskService;
  watches: WatchHub;
  /** Undefined without SWITCHYARD_SECRET_ENCRYPTION_KEY. */
  cipher: SecretCipher | undefined;
  ingestEndpoints: EndpointCache;
  /** Ends open Watch streams (`deps.stopping`), so in-flight calls can finish; idempotent. */
  stopStreams(): void;
  /** Stops the Watch poller; after the calls have finished. */
  closeWatches(): void;
}

export function createServiceDeps(runtime: GatewayRuntime, options: ServiceDepsOptions): ServiceParts {
  const { config, logger, pool } = runtime;
  const stopping = new AbortController();
  const tasks = new TaskService({
    pool,
    engine: runtime.engine,
    approvals: runtime.stores.approvals,
    tasks: runtime.stores.tasks,
    replies: runtime.stores.replies,
    publisher: runtime.publisher,
    maxPayloadBytes: config.bus.maxPayloadBytes,
    transact: tenantScoped(pool),
    replyDeadlineMs: replyDeadlineMs(config),
    // Starts go to the tenant's shard owner as signed inbox envelopes: no engine run (nor audit row) in the gateway.
    ...(options.starts === "owner" ? { owner: { signer: runtime.busAuth.lazySigner(GATEWAY_SENDER), shardCount: config.shards.count } } : {}),
  });
  const starts = new StartBatcher<StartTaskRequest>({ tasks, request: (request) => request });
  const watches = new WatchHub({
    db: pool,
    reads: runtime.stores.taskReads,
    intervalMs: options.watchIntervalMs,
    limits: { perTenant: options.watchMaxPerTenant, total: options.watchMaxStreams },
    logger,
  });
  // One cipher for the vault services and the ingest route (undefined without SWITCHYARD_SECRET_ENCRYPTION_KEY).
  const cipher = createSecretCipher(config.origin.encryptionKeys);
  const ingestEndpoints = new EndpointCache({ db: pool, store: runtime.stores.ingestEndpoints, cipher, ttlMs: options.ingestCacheTtlMs, logger });
  const deps: ServiceDeps = {
    pool,
    stores: runtime.stores,
    cipher,
    ingestEndpoints,
    publicUrl: config.gateway.publicUrl,
    foreignTransports: runtime.a2a?.transports ?? foreignTransportsFor(config.foreign),
    ...(runtime.a2a ? { breakers: runtime.a2a.breakers } : {}),
    tasks,
    starts,
    bus: runtime.bus,
    redis: runtime.redis,
    keyPrefix: config.bus.keyPrefix,
    flagDefaults: config.flags,
    ...(runtime.flagsChanged ? { flagsChanged: runtime.flagsChanged } : {}),
    maxPayloadBytes: config.bus.maxPayloadBytes,
    shardCount: config.shards.count,
    logger,
    watches,
    stopping: stopping.signal,
  };
  return { deps, tasks, watches, cipher, ingestEndpoints, stopStreams: () => stopping.abort(), closeWatches: () => watches.close() };
}
