/**
 * The Postgres adapter of the checkpoint keys port (checkpoint-store.ts): `checkpoint_keys` and the advisory lock
 * taken while keys are created or rotated. One SQL operation per function.
 */
import type { Queryable } from "../db.js";
import type { CheckpointKeyInfo, CheckpointKeyStore, StoredCheckpointKey } from "./checkpoint-store.js";

/** First key of the two-key advisory lock taken while keys are created or rotated. */
const KEY_LOCK_NAMESPACE = 0x5359_434b;

export function createPostgresCheckpointKeyStore(): CheckpointKeyStore {
  return { insert: insertKey, lock: lockKeys, newestActive: newestActiveKey, registerPublic: registerPublicKey, retireActive: retireActiveKeys, list: listKeys, publicKeys };
}

async function insertKey(tx: Queryable, key: StoredCheckpointKey): Promise<void> {
  // clock_timestamp(), not now(): a key created later in the same transaction must sort as newer.
  await tx.query("INSERT INTO checkpoint_keys (kid, public_key, private_key, created_at) VALUES ($1, $2, $3, clock_timestamp())", [key.kid, key.publicKey, key.privateKeyPem]);
}

async function lockKeys(tx: Queryable): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock($1::int, 0)", [KEY_LOCK_NAMESPACE]);
}

async function newestActiveKey(db: Queryable): Promise<StoredCheckpointKey | undefined> {
  const { rows } = await db.query<{ kid: string; public_key: string; private_key: string }>(
    `SELECT kid, public_key, private_key FROM checkpoint_keys
     WHERE retired_at IS NULL AND private_key IS NOT NULL ORDER BY created_at DESC, kid DESC LIMIT 1`,
  );
  const row = rows[0];
  return row ? { kid: row.kid, publicKey: row.public_key, privateKeyPem: row.private_key } : undefined;
}

async function registerPublicKey(db: Queryable, key: { kid: string; publicKey: string }): Promise<void> {
  await db.query("INSERT INTO checkpoint_keys (kid, public_key, private_key) VALUES ($1, $2, NULL) ON CONFLICT (kid) DO NOTHING", [key.kid, key.publicKey]);
}

async function retireActiveKeys(tx: Queryable): Promise<void> {
  await tx.query("UPDATE checkpoint_keys SET retired_at = clock_timestamp(), private_key = NULL WHERE retired_at IS NULL AND private_key IS NOT NULL");
}

async function listKeys(db: Queryable): Promise<CheckpointKeyInfo[]> {
  const { rows } = await db.query<{ kid: string; public_key: string; created_at: Date; retired_at: Date | null; has_private_key: boolean }>(
    `SELECT kid, public_key, created_at, retired_at, private_key IS NOT NULL AS has_private_key
     FROM checkpoint_keys ORDER BY created_at DESC, kid DESC`,
  );
  return rows.map((r) => ({ kid: r.kid, publicKey: r.public_key, createdAt: r.created_at, retiredAt: r.retired_at, hasPrivateKey: r.has_private_key }));
}

async function publicKeys(db: Queryable, kids?: readonly string[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ kid: string; public_key: string }>(
    "SELECT kid, public_key FROM checkpoint_keys WHERE $1::text[] IS NULL OR kid = ANY($1::text[])",
    [kids ? [...kids] : null],
  );
  return new Map(rows.map((r) => [r.kid, r.public_key]));
}
