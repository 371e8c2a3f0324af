/**
 * The only module that reads the environment. `loadConfig()` is called once at process start-up; everything
 * else receives the resulting object (or a slice of it) through options.
 */
import { ErrorCode, SwitchyardError } from "./errors.js";
import { parseBusSecrets, parsePublisherKey, type BusSecret, type PublisherKey } from "./bus/auth/bus-keys.js";
import { ENCRYPTION_KEY_VARIABLE, parseEncryptionKeys, type EncryptionKey } from "./vault/secret-cipher.js";
import { parseRedisUrl } from "./bus/redis-url.js";

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

/** Tenant shards and their leases (issue 11; src/coordinator/shards.ts, shard-leases.ts). */
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

export const defaultConfig: Config = {
  origin: {
    encryptionKeys: [],
    ingestMaxBodyBytes: 256 * 1024,
    replyGraceMs: 15 * 60_000,
    replyTaskCap: 20,
    replyRatePerMinute: 30,
    replyBurst: 10,
    replyCost: 0,
    replyTimeoutMs: 10_000,
    replyDialAttempts: 3,
  },
  busAuth: { secrets: [], publisherKeys: [] },
  redisUrl: "redis://127.0.0.1:6379",
  databaseUrl: "postgres://postgres@127.0.0.1:5432/switchyard",
  logLevel: "info",
  bus: {
    keyPrefix: "sy:",
    readBatch: 100,
    blockMs: 1000,
    reclaimIdleMs: 30_000,
    maxDeliveries: 5,
    trimMaxLen: 100_000,
    maxPayloadBytes: 1024 * 1024,
  },
  coordinator: {
    batchSize: 200,
    defaultStepTimeoutMs: 60_000,
    sweepIntervalMs: 1_000,
    outboxStaleMs: 2_000,
    approvalTtlMs: 24 * 60 * 60 * 1000,
    maxOutstandingSubQueries: 16,
    maxSubQueriesPerAttempt: 64,
    auditHeadsInMemory: true,
    dedupeRetentionMs: 7 * 24 * 60 * 60 * 1000,
  },
  shards: {
    count: 64,
    leaseTtlMs: 5_000,
  },
  harness: {
    shutdownGraceMs: 10_000,
    heartbeatMs: 10_000,
  },
  flags: {
    busEnabled: false,
    coordinatorEnabled: false,
    coordinatorTenants: [],
    harnessEnabled: false,
    harnessScopes: [],
    busRouted: [],
    egressEnabled: false,
    egressTenants: [],
    replyEnabled: false,
    replyTenants: [],
    pollMs: 1_000,
  },  gateway: { host: "127.0.0.1", port: 8080, publicUrl: "http://127.0.0.1:8080", maxBodyBytes: 1024 * 1024, watchMaxPerTenant: 32, watchMaxStreams: 512 },
  metrics: { host: "127.0.0.1", port: null },
  telemetry: { tracing: false, serviceName: null },
  services: { redisUrlSet: false, databaseUrlSet: false, embedded: "auto", dataDir: ".switchyard" },
  checkpoints: { signingKeyPem: null, everyRows: 1000, everyMs: 60_000 },
  remote: { url: null, token: null },
  foreign: {
    allowedNetworks: [],
    connectTimeoutMs: 5_000,
    totalTimeoutMs: 15_000,
    maxResponseBytes: 1024 * 1024,
    retries: 3,
    retryBaseMs: 200,
    breakerResetMs: 30_000,
    breakerErrorPercent: 50,
    breakerVolume: 5,
    cardTtlMs: 300_000,
    callbackTokenGraceMs: 3_600_000,
    callbackMaxBytes: 1024 * 1024,
    callbackRatePerSec: 200,
    sweepAfterMs: 30_000,
    sweepIntervalMs: 5_000,
    pollBaseMs: 250,
    pollMaxMs: 5_000,
    secrets: {},
  },

};

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
    throw new SwitchyardError(ErrorCode.Config, `${name} must be an integer ${range}, got ${JSON.stringify(raw)}`, {
      details: { variable: name },
    });
  }
  return value;
}

function nonNegativeNumber(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    throw new SwitchyardError(ErrorCode.Config, `${name} must be a number >= 0, got ${JSON.stringify(raw)}`, { details: { variable: name } });
  }
  return value;
}

function url(env: Env, name: string, fallback: string, schemes: string[]): string {
  const raw = env[name] || fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new SwitchyardError(ErrorCode.Config, `${name} is not a URL: ${JSON.stringify(raw)}`, { details: { variable: name } });
  }
  if (!schemes.includes(parsed.protocol)) {
    throw new SwitchyardError(ErrorCode.Config, `${name} must use ${schemes.join(" or ")}, got ${parsed.protocol}`, {
      details: { variable: name },
    });
  }
  return raw;
}

/** One Redis (`redis://`, `rediss://`) or a cluster (`redis+cluster://host:port,host:port`); see bus/redis-url.ts. */
function redisUrl(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  parseRedisUrl(raw, name);
  return raw;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = raw.trim().toLowerCase();
  if (value === "true") return true;
  if (value === "false") return false;
  throw new SwitchyardError(ErrorCode.Config, `${name} must be true or false, got ${JSON.stringify(raw)}`, { details: { variable: name } });
}

/** One of `values` (case-insensitive); unset or empty is the default. */
function oneOf<const T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const value = raw.trim().toLowerCase();
  const found = values.find((v) => v === value);
  if (found === undefined) {
    throw new SwitchyardError(ErrorCode.Config, `${name} must be one of ${values.join(", ")}, got ${JSON.stringify(raw)}`, { details: { variable: name } });
  }
  return found;
}

const TENANT_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const QUEUE_RE = /^(role|team):[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** `*`, or a comma-separated list whose every item `valid` accepts; empty means none. */
function scopeList(env: Env, name: string, valid: RegExp, example: string): ScopeList {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return [];
  if (raw.trim() === "*") return "*";
  const items = raw.split(",").map((item) => item.trim());
  for (const [index, item] of items.entries()) {
    if (!valid.test(item)) {
      const why = item === "" ? "an empty item" : item === "*" ? `"*" mixed with names (use "*" alone)` : JSON.stringify(item);
      throw new SwitchyardError(ErrorCode.Config, `${name} must be "*" or a comma-separated list like ${example}; item ${index + 1} is ${why}`, {
        details: { variable: name },
      });
    }
  }
  return [...new Set(items)];
}

/** Reads configuration from the environment (default: `process.env`), validating every value. */
export function loadConfig(env: Env = process.env): Config {
  const d = defaultConfig;
  return {
    redisUrl: redisUrl(env, "REDIS_URL", d.redisUrl),
    databaseUrl: url(env, "DATABASE_URL", d.databaseUrl, ["postgres:", "postgresql:"]),
    logLevel: env.SWITCHYARD_LOG_LEVEL || d.logLevel,
    bus: {
      keyPrefix: env.SWITCHYARD_KEY_PREFIX ?? d.bus.keyPrefix,
      readBatch: int(env, "SWITCHYARD_READ_BATCH", d.bus.readBatch, 1),
      blockMs: int(env, "SWITCHYARD_BLOCK_MS", d.bus.blockMs, 1),
      reclaimIdleMs: int(env, "SWITCHYARD_RECLAIM_IDLE_MS", d.bus.reclaimIdleMs, 1),
      maxDeliveries: int(env, "SWITCHYARD_MAX_DELIVERIES", d.bus.maxDeliveries, 1),
      trimMaxLen: int(env, "SWITCHYARD_TRIM_MAXLEN", d.bus.trimMaxLen, 1),
      maxPayloadBytes: int(env, "SWITCHYARD_MAX_PAYLOAD_BYTES", d.bus.maxPayloadBytes, 1),
    },
    coordinator: {
      batchSize: int(env, "SWITCHYARD_BATCH_SIZE", d.coordinator.batchSize, 1),
      defaultStepTimeoutMs: int(env, "SWITCHYARD_STEP_TIMEOUT_MS", d.coordinator.defaultStepTimeoutMs, 1),
      sweepIntervalMs: int(env, "SWITCHYARD_SWEEP_INTERVAL_MS", d.coordinator.sweepIntervalMs, 10),
      outboxStaleMs: int(env, "SWITCHYARD_OUTBOX_STALE_MS", d.coordinator.outboxStaleMs, 0),
      approvalTtlMs: int(env, "SWITCHYARD_APPROVAL_TTL_MS", d.coordinator.approvalTtlMs, 1),
      maxOutstandingSubQueries: int(env, "SWITCHYARD_DELEGATION_MAX_OUTSTANDING", d.coordinator.maxOutstandingSubQueries, 1),
      maxSubQueriesPerAttempt: int(env, "SWITCHYARD_DELEGATION_MAX_PER_ATTEMPT", d.coordinator.maxSubQueriesPerAttempt, 1),
      auditHeadsInMemory: bool(env, "SWITCHYARD_AUDIT_HEADS_IN_MEMORY", d.coordinator.auditHeadsInMemory),
      // At least an hour: a shorter window could forget an envelope the stream or the outbox relay still redelivers.
      dedupeRetentionMs: int(env, "SWITCHYARD_DEDUPE_RETENTION_MS", d.coordinator.dedupeRetentionMs, 3_600_000),
    },
    shards: {
      count: int(env, "SWITCHYARD_SHARD_COUNT", d.shards.count, 1, 1024),
      leaseTtlMs: int(env, "SWITCHYARD_SHARD_LEASE_TTL_MS", d.shards.leaseTtlMs, 500),
    },
    harness: {
      shutdownGraceMs: int(env, "SWITCHYARD_SHUTDOWN_GRACE_MS", d.harness.shutdownGraceMs, 0),
      heartbeatMs: int(env, "SWITCHYARD_HEARTBEAT_MS", d.harness.heartbeatMs, 100),
    },
    flags: {
      busEnabled: bool(env, "SWITCHYARD_BUS_ENABLED", d.flags.busEnabled),
      coordinatorEnabled: bool(env, "SWITCHYARD_COORDINATOR_ENABLED", d.flags.coordinatorEnabled),
      coordinatorTenants: scopeList(env, "SWITCHYARD_COORDINATOR_TENANTS", TENANT_RE, "acme,globex"),
      harnessEnabled: bool(env, "SWITCHYARD_HARNESS_ENABLED", d.flags.harnessEnabled),
      harnessScopes: scopeList(env, "SWITCHYARD_HARNESS_SCOPES", QUEUE_RE, "role:writer,team:ops"),
      busRouted: scopeList(env, "SWITCHYARD_BUS_ROUTED", QUEUE_RE, "role:researcher,team:ops"),
      egressEnabled: bool(env, "SWITCHYARD_A2A_EGRESS_ENABLED", d.flags.egressEnabled),
      egressTenants: scopeList(env, "SWITCHYARD_A2A_EGRESS_TENANTS", TENANT_RE, "acme,globex"),
      replyEnabled: bool(env, "SWITCHYARD_REPLY_ENABLED", d.flags.replyEnabled),
      replyTenants: scopeList(env, "SWITCHYARD_REPLY_TENANTS", TENANT_RE, "acme,globex"),
      pollMs: int(env, "SWITCHYARD_FLAGS_POLL_MS", d.flags.pollMs, 50),
    },
    gateway: {
      host: env.SWITCHYARD_GATEWAY_HOST || d.gateway.host,
      port: int(env, "SWITCHYARD_GATEWAY_PORT", d.gateway.port, 0),
      publicUrl: url(env, "SWITCHYARD_PUBLIC_URL", d.gateway.publicUrl, ["http:", "https:"]).replace(/\/+$/, ""),
      maxBodyBytes: int(env, "SWITCHYARD_GATEWAY_MAX_BODY_BYTES", d.gateway.maxBodyBytes, 1),
      watchMaxPerTenant: int(env, "SWITCHYARD_WATCH_MAX_PER_TENANT", d.gateway.watchMaxPerTenant, 1),
      watchMaxStreams: int(env, "SWITCHYARD_WATCH_MAX_STREAMS", d.gateway.watchMaxStreams, 1),
    },
    metrics: {
      host: env.SWITCHYARD_METRICS_HOST || d.metrics.host,
      port: env.SWITCHYARD_METRICS_PORT === undefined || env.SWITCHYARD_METRICS_PORT === "" ? null : int(env, "SWITCHYARD_METRICS_PORT", 0, 0),
    },
    busAuth: {
      secrets: env.SWITCHYARD_BUS_SECRET ? parseBusSecrets(env.SWITCHYARD_BUS_SECRET) : [],
      publisherKeys: list(env, "SWITCHYARD_BUS_KEY").map((key) => parsePublisherKey(key)),
    },
    // Validated where it is used (the CLI names the flag and the variable in its error).
    remote: { url: env.SWITCHYARD_URL || null, token: env.SWITCHYARD_TOKEN || null },
    telemetry: {
      tracing:
        !bool(env, "OTEL_SDK_DISABLED", false) &&
        ((env.OTEL_TRACES_EXPORTER !== undefined && env.OTEL_TRACES_EXPORTER.trim() !== "" && env.OTEL_TRACES_EXPORTER.trim().toLowerCase() !== "none") ||
          !!env.OTEL_EXPORTER_OTLP_ENDPOINT ||
          !!env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
      serviceName: env.OTEL_SERVICE_NAME || null,
    },
    services: {
      redisUrlSet: !!env.REDIS_URL,
      databaseUrlSet: !!env.DATABASE_URL,
      embedded: oneOf(env, "SWITCHYARD_EMBEDDED_SERVICES", ["auto", "off"] as const, d.services.embedded),
      dataDir: env.SWITCHYARD_DATA_DIR || d.services.dataDir,
    },
    checkpoints: {
      signingKeyPem: env.SWITCHYARD_CHECKPOINT_KEY || null,
      everyRows: int(env, "SWITCHYARD_CHECKPOINT_EVERY_ROWS", d.checkpoints.everyRows, 1),
      everyMs: int(env, "SWITCHYARD_CHECKPOINT_EVERY_MS", d.checkpoints.everyMs, 1),
    },
    origin: {
      encryptionKeys: env[ENCRYPTION_KEY_VARIABLE] ? parseEncryptionKeys(env[ENCRYPTION_KEY_VARIABLE]!) : [],
      ingestMaxBodyBytes: int(env, "SWITCHYARD_INGEST_MAX_BODY_BYTES", d.origin.ingestMaxBodyBytes, 1),
      replyGraceMs: int(env, "SWITCHYARD_REPLY_GRACE_MS", d.origin.replyGraceMs, 0),
      replyTaskCap: int(env, "SWITCHYARD_REPLY_TASK_CAP", d.origin.replyTaskCap, 0),
      replyRatePerMinute: int(env, "SWITCHYARD_REPLY_RATE_PER_MIN", d.origin.replyRatePerMinute, 1),
      replyBurst: int(env, "SWITCHYARD_REPLY_BURST", d.origin.replyBurst, 1),
      replyCost: nonNegativeNumber(env, "SWITCHYARD_REPLY_COST", d.origin.replyCost),
      replyTimeoutMs: int(env, "SWITCHYARD_REPLY_TIMEOUT_MS", d.origin.replyTimeoutMs, 1),
      replyDialAttempts: int(env, "SWITCHYARD_REPLY_DIAL_ATTEMPTS", d.origin.replyDialAttempts, 1),
    },
    foreign: {
      allowedNetworks: list(env, "SWITCHYARD_EGRESS_ALLOWED_NETWORKS"),
      connectTimeoutMs: int(env, "SWITCHYARD_EGRESS_CONNECT_TIMEOUT_MS", d.foreign.connectTimeoutMs, 1),
      totalTimeoutMs: int(env, "SWITCHYARD_EGRESS_TOTAL_TIMEOUT_MS", d.foreign.totalTimeoutMs, 1),
      maxResponseBytes: int(env, "SWITCHYARD_EGRESS_MAX_RESPONSE_BYTES", d.foreign.maxResponseBytes, 1),
      retries: int(env, "SWITCHYARD_EGRESS_RETRIES", d.foreign.retries, 1),
      retryBaseMs: int(env, "SWITCHYARD_EGRESS_RETRY_BASE_MS", d.foreign.retryBaseMs, 0),
      breakerResetMs: int(env, "SWITCHYARD_BREAKER_RESET_MS", d.foreign.breakerResetMs, 1),
      breakerErrorPercent: int(env, "SWITCHYARD_BREAKER_ERROR_PERCENT", d.foreign.breakerErrorPercent, 1),
      breakerVolume: int(env, "SWITCHYARD_BREAKER_VOLUME", d.foreign.breakerVolume, 1),
      cardTtlMs: int(env, "SWITCHYARD_A2A_CARD_TTL_MS", d.foreign.cardTtlMs, 0),
      callbackTokenGraceMs: int(env, "SWITCHYARD_A2A_CALLBACK_GRACE_MS", d.foreign.callbackTokenGraceMs, 0),
      callbackMaxBytes: int(env, "SWITCHYARD_A2A_CALLBACK_MAX_BYTES", d.foreign.callbackMaxBytes, 1),
      callbackRatePerSec: int(env, "SWITCHYARD_A2A_CALLBACK_RATE", d.foreign.callbackRatePerSec, 1),
      sweepAfterMs: int(env, "SWITCHYARD_A2A_SWEEP_AFTER_MS", d.foreign.sweepAfterMs, 0),
      sweepIntervalMs: int(env, "SWITCHYARD_A2A_SWEEP_INTERVAL_MS", d.foreign.sweepIntervalMs, 10),
      pollBaseMs: int(env, "SWITCHYARD_FOREIGN_POLL_BASE_MS", d.foreign.pollBaseMs, 10),
      pollMaxMs: int(env, "SWITCHYARD_FOREIGN_POLL_MAX_MS", d.foreign.pollMaxMs, 10),
      secrets: Object.fromEntries(
        Object.entries(env)
          // The vault's key ring shares the prefix but is no tenant's credential.
          .filter(([name, value]) => name.startsWith("SWITCHYARD_SECRET_") && name !== ENCRYPTION_KEY_VARIABLE && value)
          .map(([name, value]) => [name.slice("SWITCHYARD_SECRET_".length), value!]),
      ),
    },
  };
}

/** A comma-separated list; empty entries dropped. Each entry's own validation belongs to its user. */
function list(env: Env, name: string): string[] {
  return (env[name] ?? "").split(",").map((v) => v.trim()).filter(Boolean);
}
