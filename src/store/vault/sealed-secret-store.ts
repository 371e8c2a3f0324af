/**
 * The sealed secrets port (issue 27 §2, secrets/vault): the vault envelopes stored in `connections` and
 * `ingest_endpoints`, as the key-rotation re-seal (vault/rewrap.ts) reads and rewrites them. The adapter is
 * postgres-sealed-secret-store.ts. Envelopes only: nothing here opens or seals a secret.
 */
import type { Queryable } from "../db.js";

/** A column holding vault envelopes. */
export interface SealedColumn {
  table: "connections" | "ingest_endpoints";
  column: "secret_ciphertext" | "previous_secret_ciphertext";
}

export interface SealedSecretStore {
  /** The envelopes of `column` not sealed with `currentKeyId` (of `orgId`, when given), locked in id order in `tx`. */
  lockStale(tx: Queryable, column: SealedColumn, currentKeyId: string, orgId: string | undefined): Promise<Array<{ id: string; envelope: string }>>;
  /** Replaces the envelope of row `id`. */
  reseal(tx: Queryable, column: SealedColumn, id: string, envelope: string): Promise<void>;
}
