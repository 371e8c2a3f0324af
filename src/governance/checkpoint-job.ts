/**
 * The periodic checkpoint signer. Each run finds the tenants whose chain head moved far enough since their last
 * checkpoint — `everyRows` new rows, or an unsigned row older than `everyMs` — and signs their heads
 * (`signHead`). Coordinators run it on a timer; several may: a per-tenant advisory lock lets one sign while the
 * others skip, and a checkpoint per (tenant, seq) is written once.
 */
import type { Logger } from "../logger.js";
import { silentLogger } from "../logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Pool } from "../store/db.js";
import type { CheckpointStores } from "../store/audit/checkpoint-store.js";
import { activeSigningKey, parseOperatorKey, type SigningKey } from "./checkpoint-keys.js";
import { signHead } from "./checkpoints.js";

export const DEFAULT_CHECKPOINT_EVERY_ROWS = 1000;
export const DEFAULT_CHECKPOINT_EVERY_MS = 60_000;
export const DEFAULT_CHECKPOINT_INTERVAL_MS = 5_000;

export interface CheckpointPolicy {
  /** Sign once this many rows are unsigned. @defaultValue 1000 */
  everyRows?: number;
  /** Sign once the oldest unsigned row is this old (by its at_ms). @defaultValue 60 000 */
  everyMs?: number;
  /**
   * An operator-supplied Ed25519 private key (PKCS#8 PEM) to sign with instead of a key held in the database
   * (`SWITCHYARD_CHECKPOINT_KEY`). Only its public key is stored.
   */
  operatorKey?: string | SigningKey;
}

export interface RunCheckpointOptions extends CheckpointPolicy {
  pool: Pool;
  /** The chain, checkpoints and keys (`runtime.stores`). */
  stores: CheckpointStores;
  /** The signing time (ms since the epoch); also what "old" is measured against. */
  now: number;
  logger?: Logger;
  metrics?: Metrics;
  signal?: AbortSignal;
}

/** Signs every tenant whose head moved enough; returns how many checkpoints were written. */
export async function runCheckpointOnce(options: RunCheckpointOptions): Promise<number> {
  const everyRows = options.everyRows ?? DEFAULT_CHECKPOINT_EVERY_ROWS;
  const everyMs = options.everyMs ?? DEFAULT_CHECKPOINT_EVERY_MS;
  const logger = (options.logger ?? silentLogger).child({ component: "checkpoints" });
  const heads = await options.stores.checkpoints.unsignedHeads(options.pool);
  const due = heads.filter((h) => {
    if (h.unsignedRows >= everyRows) return true;
    // A missing first unsigned row is a broken chain: let signHead say so (it refuses and names the seq).
    return h.oldestUnsignedAtMs === null || options.now - h.oldestUnsignedAtMs >= everyMs;
  });
  if (due.length === 0) return 0;

  const key = await signingKey(options);
  let signed = 0;
  for (const { orgId } of due) {
    if (options.signal?.aborted) break;
    const outcome = await signHead(options.stores, options.pool, orgId, { key, now: options.now, signal: options.signal });
    if (outcome.status === "signed") {
      signed++;
      options.metrics?.checkpoints.inc({ outcome: "signed" });
      logger.info({ orgId, seq: outcome.checkpoint.seq, kid: key.kid }, "audit checkpoint signed");
    } else if (outcome.status === "refused") {
      options.metrics?.checkpoints.inc({ outcome: "refused" });
      logger.error({ orgId, brokenSeq: outcome.broken.seq, reason: outcome.broken.reason }, "audit chain does not verify since its last checkpoint; not signing it");
    }
  }
  return signed;
}

function signingKey(options: RunCheckpointOptions): Promise<SigningKey> {
  const operatorKey = typeof options.operatorKey === "string" ? parseOperatorKey(options.operatorKey) : options.operatorKey;
  return activeSigningKey(options.stores, options.pool, operatorKey ? { operatorKey } : {});
}

/** What a coordinator runs on a timer. */
export interface CheckpointJob {
  /** How often to look for heads to sign. */
  intervalMs: number;
  run(now: number): Promise<number>;
}

export interface CheckpointJobOptions extends CheckpointPolicy {
  pool: Pool;
  /** `runtime.stores`: the audit chain, its checkpoints and the signing keys. */
  stores: CheckpointStores;
  /** @defaultValue 5 000 */
  intervalMs?: number;
  logger?: Logger;
  metrics?: Metrics;
}

export function createCheckpointJob(options: CheckpointJobOptions): CheckpointJob {
  // Parsed once: a bad operator key fails here, at start-up, not on every run.
  const operatorKey = typeof options.operatorKey === "string" ? parseOperatorKey(options.operatorKey) : options.operatorKey;
  return {
    intervalMs: options.intervalMs ?? DEFAULT_CHECKPOINT_INTERVAL_MS,
    run: (now) => runCheckpointOnce({ ...options, operatorKey, now }),
  };
}

/**
 * The job a coordinator runs: the one it was given, none when given `false`, else the default job (signing with
 * a database-held key at the default thresholds).
 */
export function checkpointJobOf(options: { checkpoints?: CheckpointJob | false; pool: Pool; stores: CheckpointStores; logger?: Logger; metrics?: Metrics }): CheckpointJob | undefined {
  if (options.checkpoints === false) return undefined;
  return options.checkpoints ?? createCheckpointJob({ pool: options.pool, stores: options.stores, logger: options.logger, metrics: options.metrics });
}
