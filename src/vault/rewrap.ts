/**
 * Re-sealing stored secrets after a key rotation: every connection and ingest-endpoint secret not sealed with the
 * current key (the first of SWITCHYARD_SECRET_ENCRYPTION_KEY) is opened with the key that sealed it and sealed
 * again with the current one, under the same row binding (`connection:<id>`, `ingest:<id>`). Once it reports
 * nothing left, the old key can leave the ring.
 *
 * One transaction with the rows locked: an envelope that no key of the ring opens stops the run with nothing
 * changed and names the row, so the operator can put the missing key back and run it again.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import { withTransaction, type Pool, type PoolClient } from "../store/db.js";
import type { SealedColumn, SealedSecretStore } from "../store/vault/sealed-secret-store.js";
import type { SecretCipher } from "./secret-cipher.js";

export interface RewrapResult {
  /** The key every secret is now sealed with. */
  keyId: string;
  connections: number;
  /** Ingest endpoint envelopes re-sealed (current and previous secrets counted separately). */
  ingestSecrets: number;
}

interface Column extends SealedColumn {
  aad: (id: string) => string;
}

const COLUMNS: readonly Column[] = [
  { table: "connections", column: "secret_ciphertext", aad: (id) => `connection:${id}` },
  { table: "ingest_endpoints", column: "secret_ciphertext", aad: (id) => `ingest:${id}` },
  { table: "ingest_endpoints", column: "previous_secret_ciphertext", aad: (id) => `ingest:${id}` },
];

async function rewrapColumn(store: SealedSecretStore, client: PoolClient, cipher: SecretCipher, spec: Column, orgId: string | undefined): Promise<number> {
  const rows = await store.lockStale(client, spec, cipher.currentKeyId, orgId);
  for (const row of rows) {
    let plain: string;
    try {
      plain = cipher.open(row.envelope, spec.aad(row.id));
    } catch (error) {
      throw new SwitchyardError(ErrorCode.FailedPrecondition, `${spec.table} ${row.id} (${spec.column}): ${(error as Error).message}; nothing was re-sealed`, {
        cause: error,
        details: { table: spec.table, id: row.id, column: spec.column, keyId: cipher.keyIdOf(row.envelope) },
      });
    }
    await store.reseal(client, spec, row.id, cipher.seal(plain, spec.aad(row.id)));
  }
  return rows.length;
}

export async function rewrapSecrets(store: SealedSecretStore, pool: Pool, cipher: SecretCipher, options: { orgId?: string } = {}): Promise<RewrapResult> {
  return withTransaction(pool, async (client) => {
    const counts = [];
    for (const spec of COLUMNS) counts.push(await rewrapColumn(store, client, cipher, spec, options.orgId));
    return { keyId: cipher.currentKeyId, connections: counts[0]!, ingestSecrets: counts[1]! + counts[2]! };
  });
}
