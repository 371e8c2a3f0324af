/**
 * The Postgres adapter of the checkpoints port (checkpoint-store.ts): `audit_checkpoints`, read beside `audit_heads`
 * and `audit_log` for the heads due a signature, and the per-tenant advisory lock its signers take. One SQL
 * operation per function.
 */
import type { Checkpoint } from "../../governance/checkpoint-signing.js";
import type { Queryable } from "../db.js";
import type { CheckpointStore, UnsignedHead } from "./checkpoint-store.js";

/** First key of the two-key advisory lock that keeps two signers of one tenant apart. */
const SIGN_LOCK_NAMESPACE = 0x5359_4350;

export function createPostgresCheckpointStore(): CheckpointStore {
  return {
    list: listCheckpoints,
    latest: latestCheckpoint,
    listWithPublicKeys,
    insert: insertCheckpoint,
    lockSigner,
    tryLockSigner,
    unsignedHeads,
  };
}

interface CheckpointDbRow {
  org_id: string;
  seq: number | string;
  hash: string;
  at_ms: number | string;
  kid: string;
  signature: string;
}

function fromDb(row: CheckpointDbRow): Checkpoint {
  return { orgId: row.org_id, seq: Number(row.seq), hash: row.hash, atMs: Number(row.at_ms), kid: row.kid, signature: row.signature };
}

async function listCheckpoints(db: Queryable, orgId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<Checkpoint[]> {
  const { rows } = await db.query<CheckpointDbRow>(
    `SELECT org_id, seq, hash, at_ms, kid, signature FROM audit_checkpoints
     WHERE org_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [orgId, options.afterSeq ?? 0, options.limit ?? null],
  );
  return rows.map(fromDb);
}

async function latestCheckpoint(db: Queryable, orgId: string): Promise<Checkpoint | undefined> {
  const { rows } = await db.query<CheckpointDbRow>(
    "SELECT org_id, seq, hash, at_ms, kid, signature FROM audit_checkpoints WHERE org_id = $1 ORDER BY seq DESC LIMIT 1",
    [orgId],
  );
  return rows[0] ? fromDb(rows[0]) : undefined;
}

async function listWithPublicKeys(db: Queryable, orgId?: string): Promise<Array<Checkpoint & { publicKey: string }>> {
  const { rows } = await db.query<CheckpointDbRow & { public_key: string }>(
    `SELECT c.org_id, c.seq, c.hash, c.at_ms, c.kid, c.signature, k.public_key
     FROM audit_checkpoints c JOIN checkpoint_keys k ON k.kid = c.kid
     WHERE $1::text IS NULL OR c.org_id = $1 ORDER BY c.org_id, c.seq`,
    [orgId ?? null],
  );
  return rows.map((r) => ({ ...fromDb(r), publicKey: r.public_key }));
}

async function insertCheckpoint(tx: Queryable, checkpoint: Checkpoint): Promise<void> {
  await tx.query(
    "INSERT INTO audit_checkpoints (org_id, seq, hash, at_ms, kid, signature) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (org_id, seq) DO NOTHING",
    [checkpoint.orgId, checkpoint.seq, checkpoint.hash, checkpoint.atMs, checkpoint.kid, checkpoint.signature],
  );
}

async function lockSigner(tx: Queryable, orgId: string): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))", [SIGN_LOCK_NAMESPACE, orgId]);
}

async function tryLockSigner(tx: Queryable, orgId: string): Promise<boolean> {
  const { rows } = await tx.query<{ locked: boolean }>("SELECT pg_try_advisory_xact_lock($1::int, hashtext($2)) AS locked", [SIGN_LOCK_NAMESPACE, orgId]);
  return rows[0]?.locked === true;
}

async function unsignedHeads(db: Queryable): Promise<UnsignedHead[]> {
  const { rows } = await db.query<{ org_id: string; unsigned_rows: number | string; oldest_unsigned_at: number | string | null }>(
    `SELECT h.org_id, h.seq - coalesce(c.seq, 0) AS unsigned_rows,
            (SELECT a.at_ms FROM audit_log a WHERE a.org_id = h.org_id AND a.seq = coalesce(c.seq, 0) + 1) AS oldest_unsigned_at
     FROM audit_heads h
     LEFT JOIN LATERAL (SELECT seq FROM audit_checkpoints k WHERE k.org_id = h.org_id ORDER BY seq DESC LIMIT 1) c ON true
     WHERE h.seq > coalesce(c.seq, 0)
     ORDER BY h.org_id`,
  );
  return rows.map((r) => ({
    orgId: r.org_id,
    unsignedRows: Number(r.unsigned_rows),
    oldestUnsignedAtMs: r.oldest_unsigned_at === null ? null : Number(r.oldest_unsigned_at),
  }));
}
