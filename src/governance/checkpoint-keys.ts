/**
 * The Ed25519 keys that sign audit checkpoints (through the `checkpointKeys` port: store/audit/checkpoint-store.ts).
 *
 * - The active key is the newest key that is not retired and whose private key the table holds. Without one, the
 *   first signer generates it.
 * - `rotateCheckpointKey` retires every active key — its private key is erased, its public key stays so old
 *   checkpoints keep verifying — and creates a new one.
 * - An operator may supply the signing key instead (a PKCS#8 PEM, e.g. from a secret store): only its public key
 *   is stored, so someone who can write to the database cannot sign with it. That is the stronger setup: with a
 *   table-held key, a database writer could re-sign a rewritten chain, which only an exported copy of the
 *   checkpoints (`exportCheckpoints`) then reveals.
 *
 * The key ids and the parsing of keys are pure (checkpoint-signing.ts), re-exported here.
 */
import { createPrivateKey } from "node:crypto";
import { withTransaction, type Pool, type PoolClient, type Queryable } from "../store/db.js";
import type { CheckpointKeyInfo, CheckpointStores, StoredCheckpointKey } from "../store/audit/checkpoint-store.js";
import { generateSigningKey, type SigningKey } from "./checkpoint-signing.js";

export { checkpointKeyId, parseCheckpointPublicKey, parseOperatorKey, type SigningKey } from "./checkpoint-signing.js";
export type { CheckpointKeyInfo } from "../store/audit/checkpoint-store.js";

type KeyStores = Pick<CheckpointStores, "checkpointKeys">;

/** Generates an Ed25519 key pair and stores it as the newest key. Runs inside `client`'s transaction. */
async function insertGeneratedKey(stores: KeyStores, client: Queryable): Promise<SigningKey> {
  const { privateKeyPem, ...key } = generateSigningKey();
  await stores.checkpointKeys.insert(client, { kid: key.kid, publicKey: key.publicKey, privateKeyPem });
  return key;
}

function signingKeyOf(stored: StoredCheckpointKey | undefined): SigningKey | undefined {
  return stored ? { kid: stored.kid, privateKey: createPrivateKey(stored.privateKeyPem), publicKey: stored.publicKey } : undefined;
}

/**
 * The key to sign with now. With an operator key, that key (its public half is recorded on first use); otherwise
 * the table's active key, generated when there is none (under a lock, so concurrent signers make only one).
 */
export async function activeSigningKey(stores: KeyStores, pool: Pool, options: { operatorKey?: SigningKey } = {}): Promise<SigningKey> {
  if (options.operatorKey) {
    await registerPublicKey(stores, pool, options.operatorKey);
    return options.operatorKey;
  }
  const existing = signingKeyOf(await stores.checkpointKeys.newestActive(pool));
  if (existing) return existing;
  return withTransaction(pool, async (client) => {
    await stores.checkpointKeys.lock(client);
    return signingKeyOf(await stores.checkpointKeys.newestActive(client)) ?? (await insertGeneratedKey(stores, client));
  });
}

/** Records the public half of an operator key (no private key) so checkpoints signed with it verify from the table. */
export async function registerPublicKey(stores: KeyStores, db: Queryable, key: Pick<SigningKey, "kid" | "publicKey">): Promise<void> {
  await stores.checkpointKeys.registerPublic(db, { kid: key.kid, publicKey: key.publicKey });
}

/**
 * Retires every active table key (erasing its private key; the public key stays for verification) and creates
 * a new one. Returns the new kid. Checkpoints signed before keep verifying under their own kid.
 */
export async function rotateCheckpointKey(stores: KeyStores, pool: Pool): Promise<string> {
  return withTransaction(pool, async (client: PoolClient) => {
    await stores.checkpointKeys.lock(client);
    await stores.checkpointKeys.retireActive(client);
    return (await insertGeneratedKey(stores, client)).kid;
  });
}

/** Every key, newest first, without private keys. */
export function listCheckpointKeys(stores: KeyStores, db: Queryable): Promise<CheckpointKeyInfo[]> {
  return stores.checkpointKeys.list(db);
}

/** Public keys by kid, for verification (retired keys included). */
export function checkpointPublicKeys(stores: KeyStores, db: Queryable, kids?: readonly string[]): Promise<Map<string, string>> {
  return stores.checkpointKeys.publicKeys(db, kids);
}
