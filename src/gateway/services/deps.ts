/**
 * What the service implementations need. Tenant reads go through `withTenantTransaction(pool, …)` and the task
 * service is built with `transact: tenantScoped(pool)`, so every tenant request runs under row-level security.
 */
import type { RedisClient } from "../../bus/redis-connection.js";
import type { FlagsConfig } from "../../config/index.js";
import type { Bus } from "../../bus/bus.js";
import type { StartBatcher } from "../../tasks/start-batcher.js";
import type { StartTaskRequest, TaskService } from "../../tasks/tasks.js";
import type { EndpointCache } from "../../ingest/endpoint-cache.js";
import type { ForeignTransports } from "../../foreign/transport.js";
import type { BreakerRegistry } from "../../foreign/egress/breakers.js";
import type { Logger } from "../../logger.js";
import type { Pool } from "../../store/db.js";
import type { Stores } from "../../store/stores.js";
import type { SecretCipher } from "../../vault/secret-cipher.js";
import type { WatchHub } from "../watch-hub.js";

export interface ServiceDeps {
  /** The owner's pool: tenant code wraps it in tenant-scoped transactions; admin code uses it directly. */
  pool: Pool;
  /** The storage ports (runtime.stores): a handler reaches a concern's tables through its port. */
  stores: Stores;
  /** A TaskService whose transactions are tenant-scoped. */
  tasks: TaskService;
  /** StartTask's group commit over `tasks`: concurrent starts of one tenant share one transaction. */
  starts: Pick<StartBatcher<StartTaskRequest>, "start">;
  bus: Bus;
  redis: RedisClient;
  keyPrefix: string;
  /** This gateway's environment defaults of the flags, under the flags table (TaskService.Explain names which). */
  flagDefaults: FlagsConfig;
  /** Mirrors the flags table to Redis now, after a flag change (Runtime.flagsChanged). @defaultValue none: the next poll does */
  flagsChanged?: () => Promise<void>;
  maxPayloadBytes: number;
  /** This process's SWITCHYARD_SHARD_COUNT: what ListShards answers before a coordinator recorded the count. */
  shardCount: number;
  logger: Logger;
  /** Where Watch streams take their slot and learn that their task changed (one shared poller). */
  watches: WatchHub;
  /** Aborted when the gateway starts shutting down: open Watch streams end so in-flight calls can finish. */
  stopping: AbortSignal;
  /** The vault cipher (from SWITCHYARD_SECRET_ENCRYPTION_KEY); undefined when no key is configured, and then
   * every call that would store a secret is refused. */
  cipher?: SecretCipher;
  /** Where providers reach the gateway (config.gateway.publicUrl): ingest URLs are built from it. */
  publicUrl: string;
  /** Reaches foreign agents at registration (ForeignAgentService.Register checks the card); the runtime's own when
   * it runs FOREIGN, else built from the configuration. */
  foreignTransports?: ForeignTransports;
  /** The circuit breakers of the foreign calls this process makes (runtime.a2a); absent when it makes none. */
  breakers?: Pick<BreakerRegistry, "state">;
  /** The ingest route's endpoint cache: rotations and disables through the API forget their entry at once. */
  ingestEndpoints?: EndpointCache;
}
