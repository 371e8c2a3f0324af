/**
 * The Postgres adapter of the connections port (connection-store.ts): table `connections`, one SQL operation per
 * function. `secret_ciphertext` is read by `selectSealedSecret` alone; every other statement reads
 * `CONNECTION_COLUMNS`, which leave it out.
 */
import type { ConnectionKind } from "../../core/reply-address.js";
import type { Queryable } from "../db.js";
import type { ConnectionRecord, ConnectionStore, NewConnectionRow } from "./connection-store.js";

export function createPostgresConnectionStore(): ConnectionStore {
  return {
    insert: insertConnection,
    lockFingerprint: lockConnectionFingerprint,
    replaceSecret: replaceConnectionSecret,
    delete: deleteConnectionRow,
    list: listConnectionRows,
    find: findConnectionRow,
    findByAccount: findConnectionByAccount,
    sealedSecret: selectSealedSecret,
    recordBot: recordConnectionBotIds,
  };
}

/** The columns a record is read from; `secret_ciphertext` is deliberately not among them. */
const CONNECTION_COLUMNS =
  "id, org_id, kind, account_key, api_base_url, targets, secret_fingerprint, bot_id, app_id, created_by, created_at, updated_at, rotated_at";

function connectionFromRow(row: Record<string, unknown>): ConnectionRecord {
  const iso = (v: unknown): string => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());
  return {
    id: row.id as string,
    orgId: row.org_id as string,
    kind: row.kind as ConnectionKind,
    accountKey: row.account_key as string,
    apiBaseUrl: row.api_base_url as string,
    targets: (row.targets as string[] | null) ?? [],
    fingerprint: row.secret_fingerprint as string,
    botId: (row.bot_id as string | null) ?? null,
    appId: (row.app_id as string | null) ?? null,
    createdBy: row.created_by as string,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    rotatedAt: row.rotated_at === null || row.rotated_at === undefined ? null : iso(row.rotated_at),
  };
}

export async function insertConnection(db: Queryable, c: NewConnectionRow): Promise<ConnectionRecord | undefined> {
  const { rows } = await db.query(
    `INSERT INTO connections (id, org_id, kind, account_key, api_base_url, secret_ciphertext, secret_fingerprint, targets, created_by, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, to_timestamp($10::double precision / 1000), to_timestamp($10::double precision / 1000))
     ON CONFLICT (org_id, kind, account_key) DO NOTHING
     RETURNING ${CONNECTION_COLUMNS}`,
    [c.id, c.orgId, c.kind, c.accountKey, c.apiBaseUrl, c.secretCiphertext, c.secretFingerprint, c.targets, c.createdBy, c.nowMs],
  );
  return rows[0] ? connectionFromRow(rows[0]) : undefined;
}

export async function lockConnectionFingerprint(db: Queryable, orgId: string, id: string): Promise<string | undefined> {
  const { rows } = await db.query<{ secret_fingerprint: string }>(`SELECT secret_fingerprint FROM connections WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
  return rows[0]?.secret_fingerprint;
}

export async function replaceConnectionSecret(db: Queryable, orgId: string, id: string, secret: { ciphertext: string; fingerprint: string; nowMs: number }): Promise<ConnectionRecord> {
  const { rows } = await db.query(
    `UPDATE connections SET secret_ciphertext = $3, secret_fingerprint = $4,
       rotated_at = to_timestamp($5::double precision / 1000), updated_at = to_timestamp($5::double precision / 1000)
     WHERE org_id = $1 AND id = $2 RETURNING ${CONNECTION_COLUMNS}`,
    [orgId, id, secret.ciphertext, secret.fingerprint, secret.nowMs],
  );
  return connectionFromRow(rows[0]);
}

export async function deleteConnectionRow(db: Queryable, orgId: string, id: string): Promise<ConnectionRecord | undefined> {
  const { rows } = await db.query(`DELETE FROM connections WHERE org_id = $1 AND id = $2 RETURNING ${CONNECTION_COLUMNS}`, [orgId, id]);
  return rows[0] ? connectionFromRow(rows[0]) : undefined;
}

export async function listConnectionRows(db: Queryable, orgId: string): Promise<ConnectionRecord[]> {
  const { rows } = await db.query(`SELECT ${CONNECTION_COLUMNS} FROM connections WHERE org_id = $1 ORDER BY kind, account_key`, [orgId]);
  return rows.map(connectionFromRow);
}

export async function findConnectionRow(db: Queryable, orgId: string, id: string): Promise<ConnectionRecord | undefined> {
  const { rows } = await db.query(`SELECT ${CONNECTION_COLUMNS} FROM connections WHERE org_id = $1 AND id = $2`, [orgId, id]);
  return rows[0] ? connectionFromRow(rows[0]) : undefined;
}

export async function findConnectionByAccount(db: Queryable, orgId: string, kind: ConnectionKind, accountKey: string): Promise<ConnectionRecord | undefined> {
  const { rows } = await db.query(`SELECT ${CONNECTION_COLUMNS} FROM connections WHERE org_id = $1 AND kind = $2 AND account_key = $3`, [orgId, kind, accountKey]);
  return rows[0] ? connectionFromRow(rows[0]) : undefined;
}

export async function selectSealedSecret(db: Queryable, orgId: string, id: string): Promise<string | undefined> {
  const { rows } = await db.query<{ secret_ciphertext: string }>("SELECT secret_ciphertext FROM connections WHERE org_id = $1 AND id = $2", [orgId, id]);
  return rows[0]?.secret_ciphertext;
}

export async function recordConnectionBotIds(db: Queryable, orgId: string, id: string, ids: { botId: string | null; appId: string | null }): Promise<void> {
  await db.query(
    `UPDATE connections SET bot_id = COALESCE($3, bot_id), app_id = COALESCE($4, app_id)
     WHERE org_id = $1 AND id = $2 AND (bot_id IS DISTINCT FROM COALESCE($3, bot_id) OR app_id IS DISTINCT FROM COALESCE($4, app_id))`,
    [orgId, id, ids.botId, ids.appId],
  );
}
