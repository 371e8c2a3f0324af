/**
 * A connection as the rest of the code sees it (store/vault/connection-store.ts): every column of `connections`
 * except the sealed secret. The ciphertext leaves the store only for `openConnectionSecret` (connection-secret.ts).
 */
export type { ConnectionRecord } from "../store/vault/connection-store.js";

/** The AAD every connection secret is sealed under: a ciphertext copied into another row does not open there. */
export function connectionAad(connectionId: string): string {
  return `connection:${connectionId}`;
}
