/**
 * The only module that reads the environment. `loadConfig()` is called once at process start-up; everything
 * else receives the resulting object (or a slice of it) through options.
 */
import { ErrorCode, SwitchyardError } from "./errors.js";

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
  /** How often running processes re-read table `flags` (ms). */
  pollMs: number;
}

export interface Config {
  redisUrl: string;
  databaseUrl: string;
  logLevel: string;
  bus: BusConfig;
  coordinator: CoordinatorConfig;
  harness: HarnessConfig;
  flags: FlagsConfig;
}

export const defaultConfig: Config = {
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
    pollMs: 1_000,
  },
};

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new SwitchyardError(ErrorCode.Config, `${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`, {
      details: { variable: name },
    });
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

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = raw.trim().toLowerCase();
  if (value === "true") return true;
  if (value === "false") return false;
  throw new SwitchyardError(ErrorCode.Config, `${name} must be true or false, got ${JSON.stringify(raw)}`, { details: { variable: name } });
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
    redisUrl: url(env, "REDIS_URL", d.redisUrl, ["redis:", "rediss:"]),
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
      pollMs: int(env, "SWITCHYARD_FLAGS_POLL_MS", d.flags.pollMs, 50),
    },
  };
}
