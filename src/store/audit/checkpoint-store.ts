/**
 * The storage ports of signed audit checkpoints (issue 27 §2): the checkpoints (`audit_checkpoints`) with the lock
 * that keeps two signers of one tenant apart, and the keys that sign them (`checkpoint_keys`). The Postgres
 * adapters are postgres-checkpoint-store.ts and postgres-checkpoint-key-store.ts; governance/checkpoints.ts,
 * checkpoint-keys.ts and checkpoint-job.ts decide what to sign and take these ports (`CheckpointStores`).
 */
import type { Checkpoint } from "../../governance/checkpoint-signing.js";
import type { Queryable } from "../db.js";
import type { AuditStore } from "./audit-store.js";

/** A tenant whose chain head is past its last checkpoint. */
export interface UnsignedHead {
  orgId: string;
  /** Rows after the last checkpoint. */
  unsignedRows: number;
  /** `at_ms` of the first row after the last checkpoint; null when that row is missing (a broken chain). */
  oldestUnsignedAtMs: number | null;
}

export interface CheckpointStore {
  /** One tenant's checkpoints in seq order, after `afterSeq` (default 0), at most `limit` (default all). */
  list(db: Queryable, orgId: string, options?: { afterSeq?: number; limit?: number }): Promise<Checkpoint[]>;
  /** The tenant's newest checkpoint. */
  latest(db: Queryable, orgId: string): Promise<Checkpoint | undefined>;
  /** Every checkpoint (of one tenant, or of all) with its key's public key, by tenant and seq. */
  listWithPublicKeys(db: Queryable, orgId?: string): Promise<Array<Checkpoint & { publicKey: string }>>;
  /** Stores a checkpoint; one already stored at (tenant, seq) stays as it is. */
  insert(tx: Queryable, checkpoint: Checkpoint): Promise<void>;
  /** Takes the tenant's signing lock for the rest of `tx`, waiting for another signer. */
  lockSigner(tx: Queryable, orgId: string): Promise<void>;
  /** Takes the tenant's signing lock for the rest of `tx` if free; false when another signer holds it. */
  tryLockSigner(tx: Queryable, orgId: string): Promise<boolean>;
  /** The tenants whose head is past their last checkpoint, by tenant. */
  unsignedHeads(db: Queryable): Promise<UnsignedHead[]>;
}

/** A key as the table holds it, the private half as PKCS#8 PEM (null once retired, or for an operator's key). */
export interface StoredCheckpointKey {
  kid: string;
  /** SPKI PEM. */
  publicKey: string;
  privateKeyPem: string;
}

export interface CheckpointKeyInfo {
  kid: string;
  /** SPKI PEM. */
  publicKey: string;
  createdAt: Date;
  retiredAt: Date | null;
  /** Whether the table holds the private key (false for retired keys and operator-supplied keys). */
  hasPrivateKey: boolean;
}

export interface CheckpointKeyStore {
  /** Stores a generated key as the newest (created at the statement's clock, so it sorts after one made earlier in `tx`). */
  insert(tx: Queryable, key: StoredCheckpointKey): Promise<void>;
  /** Takes the key-creation lock for the rest of `tx`. */
  lock(tx: Queryable): Promise<void>;
  /** The newest key neither retired nor without its private key. */
  newestActive(db: Queryable): Promise<StoredCheckpointKey | undefined>;
  /** Records a public key without its private key (an operator's); a kid already known stays as it is. */
  registerPublic(db: Queryable, key: { kid: string; publicKey: string }): Promise<void>;
  /** Retires every active key, erasing its private key. */
  retireActive(tx: Queryable): Promise<void>;
  /** Every key, newest first, without private keys. */
  list(db: Queryable): Promise<CheckpointKeyInfo[]>;
  /** Public keys by kid (retired keys included); every key when `kids` is absent. */
  publicKeys(db: Queryable, kids?: readonly string[]): Promise<Map<string, string>>;
}

/** What the checkpoint signer and verifier take: the chain's reads, the checkpoints, their keys (a `Stores` fits). */
export interface CheckpointStores {
  audit: AuditStore;
  checkpoints: CheckpointStore;
  checkpointKeys: CheckpointKeyStore;
}
