/**
 * The Ed25519 keys that sign audit checkpoints (table `checkpoint_keys`).
 *
 * - A key id (`kid`) is derived from the public key (`ck_` + the first 16 hex digits of the SHA-256 of its SPKI
 *   DER), so a kid can never silently name a different key: whoever holds an exported checkpoint can check it.
 * - The active key is the newest key that is not retired and whose private key the table holds. Without one, the
 *   first signer generates it.
 * - `rotateCheckpointKey` retires every active key — its private key is erased, its public key stays so old
 *   checkpoints keep verifying — and creates a new one.
 * - An operator may supply the signing key instead (a PKCS#8 PEM, e.g. from a secret store): only its public key
 *   is stored, so someone who can write to the database cannot sign with it. That is the stronger setup: with a
 *   table-held key, a database writer could re-sign a rewritten chain, which only an exported copy of the
 *   checkpoints (`exportCheckpoints`) then reveals.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { withTransaction, type Pool, type PoolClient, type Queryable } from "../store/db.js";

/** First key of the two-key advisory lock taken while keys are created or rotated. */
const KEY_LOCK_NAMESPACE = 0x5359_434b;

export interface CheckpointKeyInfo {
  kid: string;
  /** SPKI PEM. */
  publicKey: string;
  createdAt: Date;
  retiredAt: Date | null;
  /** Whether the table holds the private key (false for retired keys and operator-supplied keys). */
  hasPrivateKey: boolean;
}

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  /** SPKI PEM. */
  publicKey: string;
}

/** The key id of a public key: `ck_` + 16 hex digits of sha256(SPKI DER). */
export function checkpointKeyId(publicKey: KeyObject | string): string {
  const key = typeof publicKey === "string" ? createPublicKey(publicKey) : publicKey;
  const der = key.export({ type: "spki", format: "der" });
  return `ck_${createHash("sha256").update(der).digest("hex").slice(0, 16)}`;
}

/** Parses a PEM public key, insisting on Ed25519; throws INVALID_ARGUMENT otherwise. */
export function parseCheckpointPublicKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoint public key does not parse: ${(error as Error).message}`, { cause: error, details: { path: "public_key" } });
  }
  if (key.asymmetricKeyType !== "ed25519") {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `checkpoint keys are Ed25519, got ${String(key.asymmetricKeyType)}`, { details: { path: "public_key" } });
  }
  return key;
}

/**
 * An operator-supplied signing key: an Ed25519 private key as PKCS#8 PEM (or a KeyObject). Throws CONFIG when it
 * is not one, so a bad `SWITCHYARD_CHECKPOINT_KEY` stops the process at start-up.
 */
export function parseOperatorKey(key: string | KeyObject): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = typeof key === "string" ? createPrivateKey(key) : key;
  } catch (error) {
    throw new SwitchyardError(ErrorCode.Config, `the checkpoint signing key does not parse as a PKCS#8 PEM private key: ${(error as Error).message}`, { cause: error });
  }
  if (privateKey.type !== "private" || privateKey.asymmetricKeyType !== "ed25519") {
    throw new SwitchyardError(ErrorCode.Config, `the checkpoint signing key must be an Ed25519 private key, got ${privateKey.type} ${String(privateKey.asymmetricKeyType)}`);
  }
  const publicKey = createPublicKey(privateKey);
  return { kid: checkpointKeyId(publicKey), privateKey, publicKey: publicKey.export({ type: "spki", format: "pem" }).toString() };
}

/** Generates an Ed25519 key pair and stores it as the newest key; returns its kid. Runs inside `client`'s transaction. */
async function insertGeneratedKey(client: Queryable): Promise<SigningKey> {
  const pair = generateKeyPairSync("ed25519");
  const publicKey = pair.publicKey.export({ type: "spki", format: "pem" }).toString();
  const privatePem = pair.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const kid = checkpointKeyId(pair.publicKey);
  // clock_timestamp(), not now(): a key created later in the same transaction must sort as newer.
  await client.query("INSERT INTO checkpoint_keys (kid, public_key, private_key, created_at) VALUES ($1, $2, $3, clock_timestamp())", [kid, publicKey, privatePem]);
  return { kid, privateKey: pair.privateKey, publicKey };
}

async function lockKeys(client: Queryable): Promise<void> {
  await client.query("SELECT pg_advisory_xact_lock($1::int, 0)", [KEY_LOCK_NAMESPACE]);
}

async function newestActiveKey(db: Queryable): Promise<SigningKey | undefined> {
  const { rows } = await db.query<{ kid: string; public_key: string; private_key: string }>(
    `SELECT kid, public_key, private_key FROM checkpoint_keys
     WHERE retired_at IS NULL AND private_key IS NOT NULL ORDER BY created_at DESC, kid DESC LIMIT 1`,
  );
  const row = rows[0];
  if (!row) return undefined;
  return { kid: row.kid, privateKey: createPrivateKey(row.private_key), publicKey: row.public_key };
}

/**
 * The key to sign with now. With an operator key, that key (its public half is recorded on first use); otherwise
 * the table's active key, generated when there is none (under a lock, so concurrent signers make only one).
 */
export async function activeSigningKey(pool: Pool, options: { operatorKey?: SigningKey } = {}): Promise<SigningKey> {
  if (options.operatorKey) {
    await registerPublicKey(pool, options.operatorKey);
    return options.operatorKey;
  }
  const existing = await newestActiveKey(pool);
  if (existing) return existing;
  return withTransaction(pool, async (client) => {
    await lockKeys(client);
    return (await newestActiveKey(client)) ?? (await insertGeneratedKey(client));
  });
}

/** Records the public half of an operator key (no private key) so checkpoints signed with it verify from the table. */
export async function registerPublicKey(db: Queryable, key: Pick<SigningKey, "kid" | "publicKey">): Promise<void> {
  await db.query("INSERT INTO checkpoint_keys (kid, public_key, private_key) VALUES ($1, $2, NULL) ON CONFLICT (kid) DO NOTHING", [key.kid, key.publicKey]);
}

/**
 * Retires every active table key (erasing its private key; the public key stays for verification) and creates
 * a new one. Returns the new kid. Checkpoints signed before keep verifying under their own kid.
 */
export async function rotateCheckpointKey(pool: Pool): Promise<string> {
  return withTransaction(pool, async (client: PoolClient) => {
    await lockKeys(client);
    await client.query("UPDATE checkpoint_keys SET retired_at = clock_timestamp(), private_key = NULL WHERE retired_at IS NULL AND private_key IS NOT NULL");
    return (await insertGeneratedKey(client)).kid;
  });
}

/** Every key, newest first, without private keys. */
export async function listCheckpointKeys(db: Queryable): Promise<CheckpointKeyInfo[]> {
  const { rows } = await db.query<{ kid: string; public_key: string; created_at: Date; retired_at: Date | null; has_private_key: boolean }>(
    `SELECT kid, public_key, created_at, retired_at, private_key IS NOT NULL AS has_private_key
     FROM checkpoint_keys ORDER BY created_at DESC, kid DESC`,
  );
  return rows.map((r) => ({ kid: r.kid, publicKey: r.public_key, createdAt: r.created_at, retiredAt: r.retired_at, hasPrivateKey: r.has_private_key }));
}

/** Public keys by kid, for verification (retired keys included). */
export async function checkpointPublicKeys(db: Queryable, kids?: readonly string[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ kid: string; public_key: string }>(
    "SELECT kid, public_key FROM checkpoint_keys WHERE $1::text[] IS NULL OR kid = ANY($1::text[])",
    [kids ? [...kids] : null],
  );
  return new Map(rows.map((r) => [r.kid, r.public_key]));
}
