/** The Postgres adapter of the sealed secrets port (sealed-secret-store.ts). */
import type { Queryable } from "../db.js";
import type { SealedColumn, SealedSecretStore } from "./sealed-secret-store.js";

export async function lockStaleEnvelopes(tx: Queryable, spec: SealedColumn, currentKeyId: string, orgId: string | undefined): Promise<Array<{ id: string; envelope: string }>> {
  // The envelope is `v1.<keyId>.<iv>.<body>`: the key id is its second part.
  const { rows } = await tx.query<{ id: string; envelope: string }>(
    `SELECT id::text AS id, ${spec.column} AS envelope FROM ${spec.table}
     WHERE ${spec.column} IS NOT NULL AND split_part(${spec.column}, '.', 2) <> $1 AND ($2::text IS NULL OR org_id = $2)
     ORDER BY id FOR UPDATE`,
    [currentKeyId, orgId ?? null],
  );
  return rows;
}

export async function resealEnvelope(tx: Queryable, spec: SealedColumn, id: string, envelope: string): Promise<void> {
  const idType = spec.table === "connections" ? "uuid" : "text";
  await tx.query(`UPDATE ${spec.table} SET ${spec.column} = $2 WHERE id = $1::${idType}`, [id, envelope]);
}

export function createPostgresSealedSecretStore(): SealedSecretStore {
  return { lockStale: lockStaleEnvelopes, reseal: resealEnvelope };
}
