/**
 * The shape of Switchyard's configuration: what `loadConfig` returns and every module receives (or a slice of it)
 * through options. Which variable fills which field is in ./variables-*.ts.
 */
import type { BusSecret, PublisherKey } from "../bus/auth/bus-keys.js";
import type { EncryptionKey } from "../vault/secret-cipher.js";

export interface BusConfig {
  /** Prefix of every Redis key; tests use a unique one each. */
  keyPrefix: string;
  /** Entries read per XREADGROUP call. */
  readBatch: number;
  /** How long a blocking read waits before returning empty (ms). */
  blockMs: number;
  /** An entry pending longer than this with no ack is reclaimed from its (presumed dead) consumer. */
  reclaimIdleMs: number;
  /** An entry delivered more than this many times goes to the dead-letter stream. */
  maxDeliveries: number;
  /** Approximate length a stream is trimmed towards; never below the oldest unacknowledged entry. */
  trimMaxLen: number;
  /** Envelope payload cap in bytes (default 1 MiB). */
  maxPayloadBytes: number;
}

export interface CoordinatorConfig {
  /** Inbound envelopes applied per database transaction. */
  batchSize: number;
  /** Step timeout when the workflow does not set one (ms). */
  defaultStepTimeoutMs: number;
  /** How often due steps (timeouts, retry backoff) are swept (ms). */
  sweepIntervalMs: number;
  /** Outbox rows older than this are published by the relay sweep even if their writer did not (ms). */
  outboxStaleMs: number;
  /** An approval not decided within this long expires: denied, the step fails closed (ms). */
  approvalTtlMs: number;
  /** Fan-out delegation: sub-queries a step may have outstanding at once. */
  maxOutstandingSubQueries: number;
  /** Fan-out delegation: sub-queries one attempt of a step may ask in all. */
  maxSubQueriesPerAttempt: number;
  /** The coordinator keeps its tenants' audit-chain heads in memory instead of locking them in every batch. */
  auditHeadsInMemory: boolean;
  /**
   * How long an applied envelope's id is kept to recognise a redelivery (ms). It must outlast any redelivery: the
   * stream's idle reclaim, the outbox relay and a dead letter replayed by hand.
   */
  dedupeRetentionMs: number;
}

/** Tenant shards and their leases (issue 11; src/bus/shards.ts, src/store/shards/postgres-shard-store.ts). */
export interface ShardConfig {
  /** How many shards tenants are spread over. Fixed for a deployment: the first coordinator records it. */
  count: number;
  /** How long a coordinator's lease on a shard lasts without renewal (ms); renewed every fifth of it. */
  leaseTtlMs: number;
}

export interface HarnessConfig {
  /** Deadline for in-flight work after a shutdown signal before it is abandoned (ms). */
  shutdownGraceMs: number;
  /** Heartbeat interval for long work (ms). */
  heartbeatMs: number;
}

/** `*` (every tenant / every role and team) or an explicit list. */
export type ScopeList = "*" | readonly string[];

/**
 * The defaults of the live flags (every one OFF unless the environment turns it on). A row in table `flags`
 * overrides the default for its name and scope; a scoped value counts only while the flag's global value is on.
 */
export interface FlagsConfig {
  /** BUS_ENABLED: coordinators and harnesses read and publish on the bus. */
  busEnabled: boolean;
  /** COORDINATOR_ENABLED (global) and the tenants it serves. */
  coordinatorEnabled: boolean;
  coordinatorTenants: ScopeList;
  /** HARNESS_ENABLED (global) and the queues (`role:NAME`, `team:NAME`) whose harnesses take work. */
  harnessEnabled: boolean;
  harnessScopes: ScopeList;
  /** BUS_ROUTED: queues (`role:NAME`, `team:NAME`) whose handlers may delegate over the bus. */
  busRouted: ScopeList;
  /** A2A_EGRESS_ENABLED (global) and the tenants whose foreign hops may leave the perimeter. */
  egressEnabled: boolean;
  egressTenants: ScopeList;
  /** REPLY_ENABLED (global) and the tenants whose workers (and API callers) may post origin replies. */
  replyEnabled: boolean;
  replyTenants: ScopeList;
  /** How often running processes re-read table `flags` (ms). */
  pollMs: number;
}

/** A standalone coordinator's own Prometheus endpoint (the gateway serves /metrics itself). */
export interface MetricsConfig {
  host: string;
  /** null: not served. */
  port: number | null;
}

export interface GatewayConfig {
  host: string;
  port: number;
  /** Base URL the outside world reaches the gateway at (approval links, A2A callback URLs). */
  publicUrl: string;
  /** Largest request body accepted (bytes). */
  maxBodyBytes: number;
  /** TaskService.Watch streams one tenant may have open at once. */
  watchMaxPerTenant: number;
  /** TaskService.Watch streams the gateway serves at once, all tenants together. */
  watchMaxStreams: number;
  /** A console session unused this long ends (ms). */
  consoleSessionIdleMs: number;
  /** A console session ends this long after sign-in however busy (ms). */
  consoleSessionMaxMs: number;
  /**
   * IP addresses and CIDRs of the proxies in front of the gateway (an Ingress controller) whose `X-Forwarded-For`
   * is believed; empty: the header is ignored and the socket peer is the client.
   */
  trustedProxies: string[];
}

export interface CheckpointConfig {
  /** Operator-supplied Ed25519 private key (PKCS#8 PEM); null = keys generated and stored in Postgres. */
  signingKeyPem: string | null;
  /** Sign a tenant's head once this many rows are unsigned… */
  everyRows: number;
  /** …or once the oldest unsigned row is this old (ms). */
  everyMs: number;
}

export interface ForeignConfig {
  /** Operator CIDRs a foreign agent may resolve to despite being private/loopback (default none). */
  allowedNetworks: string[];
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  maxResponseBytes: number;
  /** Foreign calls in flight at once per coordinator process (the sender's pool, send-slots.ts). */
  sendConcurrency: number;
  /** Percent of `sendConcurrency` one tenant may hold, times its dispatch weight (at least one slot). */
  tenantSendPercent: number;
  /** A call is aborted this many step timeouts after it started, whatever progress it reports. */
  callCeilingFactor: number;
  /** Attempts per outbound call for transient failures. */
  retries: number;
  retryBaseMs: number;
  breakerResetMs: number;
  breakerErrorPercent: number;
  breakerVolume: number;
  /** Agent Card cache lifetime (ms). */
  cardTtlMs: number;
  /** How long a callback URL's signed token stays valid after the step deadline (ms). */
  callbackTokenGraceMs: number;
  callbackMaxBytes: number;
  /** Push notifications accepted per tenant per second. */
  callbackRatePerSec: number;
  /** A bridge with no terminal push after this long is polled with GetTask (ms). */
  sweepAfterMs: number;
  sweepIntervalMs: number;
  /** First GetTask of a polled bridge (agent without push, or forced `poll`) after this long (ms); doubles per poll. */
  pollBaseMs: number;
  /** Longest wait between two polls of one bridge (ms). */
  pollMaxMs: number;
  /** Credentials for `credential_ref: env:NAME`, from SWITCHYARD_SECRET_NAME. Never logged. */
  secrets: Readonly<Record<string, string>>;
}

/** Bus authentication (README, "Bus authentication"). Both empty: only single-process runs work (dev secret). */
export interface BusAuthConfig {
  /** SWITCHYARD_BUS_SECRET: master secrets by key id, the first current. Coordinators need them. Never logged. */
  secrets: readonly BusSecret[];
  /** SWITCHYARD_BUS_KEY: keys of single publisher identities (a standalone harness or gateway). Never logged. */
  publisherKeys: readonly PublisherKey[];
}

/** Where tenant CLI commands send their calls: the gateway (when set) instead of the database. */
export interface RemoteConfig {
  url: string | null;
  token: string | null;
}

/** Origin replies (issue 9): ingest endpoints, the connection vault and the `reply` verb. */
export interface OriginConfig {
  /** SWITCHYARD_SECRET_ENCRYPTION_KEY: the key ring sealing connection and ingest secrets; empty = none. Never logged. */
  encryptionKeys: readonly EncryptionKey[];
  /** Largest webhook body an ingest endpoint accepts (bytes); larger is 413. */
  ingestMaxBodyBytes: number;
  /** How long after a task ended its worker (or the tenant) may still reply (ms). */
  replyGraceMs: number;
  /** Replies one task may make in its lifetime (refusals not counted). */
  replyTaskCap: number;
  /** Token bucket per (tenant, actor): replies per minute, and the burst. */
  replyRatePerMinute: number;
  replyBurst: number;
  /** Cost accrued per reply, in the tenant's cost units. */
  replyCost: number;
  /** One provider request's deadline (ms). */
  replyTimeoutMs: number;
  /** Dials of one reply when the connection fails or the provider answers 429 (then it is `failed`). */
  replyDialAttempts: number;
}

/** OpenTelemetry tracing (issue 12 §3), from the standard OTEL_* variables; off unless an exporter is configured. */
export interface TelemetryConfig {
  /**
   * Spans are recorded and exported: OTEL_TRACES_EXPORTER is set to something other than `none`, or
   * OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set; never with OTEL_SDK_DISABLED=true.
   */
  tracing: boolean;
  /**
   * Where spans go when tracing is on: OTEL_TRACES_EXPORTER's `otlp` / `console` entries; `otlp` alone when only an
   * OTLP endpoint turned tracing on.
   */
  exporters: Array<"otlp" | "console">;
  /** OTEL_SERVICE_NAME; null: each process names itself (`switchyard-<role>`). */
  serviceName: string | null;
}

/** Local services for a machine with nothing running (issue 12 §5). */
export interface ServicesConfig {
  /** REDIS_URL was set: an explicit URL is never replaced by an embedded service. */
  redisUrlSet: boolean;
  /** DATABASE_URL was set: likewise. */
  databaseUrlSet: boolean;
  /** SWITCHYARD_EMBEDDED_SERVICES: `auto` starts embedded services when nothing answers on the defaults; `off` never. */
  embedded: "auto" | "off";
  /** SWITCHYARD_DATA_DIR: where embedded services keep their data (relative to the working directory). */
  dataDir: string;
}

export interface Config {
  redisUrl: string;
  databaseUrl: string;
  logLevel: string;
  bus: BusConfig;
  coordinator: CoordinatorConfig;
  shards: ShardConfig;
  harness: HarnessConfig;
  flags: FlagsConfig;
  gateway: GatewayConfig;
  metrics: MetricsConfig;
  checkpoints: CheckpointConfig;
  foreign: ForeignConfig;
  remote: RemoteConfig;
  busAuth: BusAuthConfig;
  origin: OriginConfig;
  telemetry: TelemetryConfig;
  services: ServicesConfig;
}
