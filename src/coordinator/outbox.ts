/**
 * The transactional outbox. Envelopes are written in the same transaction as the decision that produced them;
 * the writer publishes them right after commit, and the relay sweep publishes whatever a crashed writer left.
 */
import type { Queryable } from "../store/db.js";

export interface OutboxRow {
  id: number;
  stream: string;
  bytes: Uint8Array;
  createdAtMs: number;
}

export async function insertOutbox(
  client: Queryable,
  rows: ReadonlyArray<{ orgId: string; stream: string; envelopeId: string; bytes: Uint8Array }>,
): Promise<OutboxRow[]> {
  if (rows.length === 0) return [];
  const now = Date.now();
  const { rows: ids } = await client.query<{ id: number }>(
    `INSERT INTO outbox (org_id, stream, envelope_id, envelope)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[]) RETURNING id`,
    [rows.map((r) => r.orgId), rows.map((r) => r.stream), rows.map((r) => r.envelopeId), rows.map((r) => Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength))],
  );
  return ids.map((r, i) => ({ id: Number(r.id), stream: rows[i]!.stream, bytes: rows[i]!.bytes, createdAtMs: now }));
}

export async function deleteOutbox(client: Queryable, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await client.query("DELETE FROM outbox WHERE id = ANY($1::bigint[])", [ids]);
}

/** Claims rows older than `olderThanMs` that nobody else is publishing right now (SKIP LOCKED). */
export async function claimStaleOutbox(client: Queryable, olderThanMs: number, limit: number): Promise<OutboxRow[]> {
  const { rows } = await client.query<{ id: number; stream: string; envelope: Buffer; created_ms: number }>(
    `SELECT id, stream, envelope, (extract(epoch FROM created_at) * 1000)::bigint AS created_ms FROM outbox
     WHERE created_at <= now() - make_interval(secs => $1::double precision / 1000)
     ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [olderThanMs, limit],
  );
  return rows.map((r) => ({ id: Number(r.id), stream: r.stream, bytes: new Uint8Array(r.envelope), createdAtMs: r.created_ms }));
}
