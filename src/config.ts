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

export interface Config {
  redisUrl: string;
  databaseUrl: string;
  logLevel: string;
  bus: BusConfig;
  coordinator: CoordinatorConfig;
  harness: HarnessConfig;
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
  };
}
