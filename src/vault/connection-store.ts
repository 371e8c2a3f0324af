/**
 * The connection vault: a tenant's outbound credentials (table `connections`). Add, rotate, delete, list, get.
 *
 * The secret is write-only. It is sealed with the vault cipher under `connection:<id>` before it reaches SQL, only
 * its keyed fingerprint is ever shown, and no function here returns, logs or audits it. With no encryption key
 * configured, add and rotate are refused (`requireCipher`): nothing is ever stored in clear.
 *
 * Every change writes its audit row (action `connection`, verdict added / rotated / deleted, destination
 * `connection:<id>`, rule `<kind>:<account>`, reason with the fingerprint) in the same transaction, to the
 * tenant's chain, the way flag changes are recorded: a credential is never in force without the record of who put
 * it there. Every query filters by the tenant explicitly; API traffic also runs under row-level security.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { appendAudit } from "../store/audit/postgres-audit-store.js";
import { isUuid, operatorChangeEntry } from "../domain.js";
import { withTransaction, type Pool, type PoolClient, type Queryable } from "../store/db.js";
import { CONNECTION_COLUMNS, connectionAad, connectionFromRow, type ConnectionRecord } from "./connection-record.js";
import { invalidConnection, normaliseConnectionInput, secretProblem, type ConnectionInput } from "./connection-input.js";
import { requireCipher, type SecretCipher } from "./secret-cipher.js";

export type { ConnectionRecord } from "./connection-record.js";
export type { ConnectionInput } from "./connection-input.js";

export interface ConnectionChange {
  /** Who made the change: recorded as `created_by` and in the audit row (`apikey:ci`, `alice (apikey:ci)`, `cli`). */
  actor: string;
  nowMs?: number;
}

type Db = Pool | PoolClient;

/** With a Pool, a transaction of its own; with a client, the caller's (which must be one). */
function transact<T>(db: Db, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  return db instanceof pg.Pool ? withTransaction(db, fn) : fn(db as PoolClient);
}

function notFound(orgId: string, id: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.NotFound, `no connection ${id} for tenant ${orgId}`, { details: { path: "id", orgId, id } });
}

function actorOf(change: ConnectionChange): string {
  const actor = typeof change.actor === "string" ? change.actor.trim() : "";
  if (actor === "") throw new SwitchyardError(ErrorCode.InvalidArgument, "actor: must name who makes the change", { details: { path: "actor" } });
  return actor.slice(0, 200);
}

async function audit(client: PoolClient, connection: ConnectionRecord, verdict: "added" | "rotated" | "deleted", actor: string, reason: string, nowMs: number): Promise<void> {
  await appendAudit(client, [
    operatorChangeEntry({
      orgId: connection.orgId,
      action: "connection",
      actor,
      destination: `connection:${connection.id}`,
      verdict,
      rule: `${connection.kind}:${connection.accountKey}`,
      reason,
      atMs: nowMs,
    }),
  ]);
}

/**
 * Adds a connection. FAILED_PRECONDITION without a cipher; INVALID_ARGUMENT listing every problem; ALREADY_EXISTS
 * when the tenant already has one for the kind and account (rotate or delete that one).
 */
export async function addConnection(db: Db, cipher: SecretCipher | undefined, orgId: string, input: ConnectionInput, change: ConnectionChange): Promise<ConnectionRecord> {
  const sealer = requireCipher(cipher, "adding a connection");
  const normal = normaliseConnectionInput(input);
  const actor = actorOf(change);
  const nowMs = change.nowMs ?? Date.now();
  const id = randomUUID();
  const ciphertext = sealer.seal(input.secret, connectionAad(id));
  const fingerprint = sealer.fingerprint(input.secret);
  return transact(db, async (client) => {
    const { rows } = await client.query(
      `INSERT INTO connections (id, org_id, kind, account_key, api_base_url, secret_ciphertext, secret_fingerprint, targets, created_by, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, to_timestamp($10::double precision / 1000), to_timestamp($10::double precision / 1000))
       ON CONFLICT (org_id, kind, account_key) DO NOTHING
       RETURNING ${CONNECTION_COLUMNS}`,
      [id, orgId, normal.kind, normal.accountKey, normal.apiBaseUrl, ciphertext, fingerprint, normal.targets, actor, nowMs],
    );
    if (!rows[0]) {
      throw new SwitchyardError(
        ErrorCode.AlreadyExists,
        `tenant ${orgId} already has a ${normal.kind} connection for ${normal.accountKey}; rotate its secret or delete it first (connection list shows its id)`,
        { details: { path: "account_key", orgId, kind: normal.kind, accountKey: normal.accountKey } },
      );
    }
    const connection = connectionFromRow(rows[0]);
    await audit(client, connection, "added", actor, `fingerprint ${fingerprint}; api ${connection.apiBaseUrl}; targets ${connection.targets.join(",") || "*"}`, nowMs);
    return connection;
  });
}

/** Replaces the secret (sealed afresh under the current key). NOT_FOUND for another tenant's or an unknown id. */
export async function rotateConnection(db: Db, cipher: SecretCipher | undefined, orgId: string, id: string, secret: string, change: ConnectionChange): Promise<ConnectionRecord> {
  const sealer = requireCipher(cipher, "rotating a connection's secret");
  const problem = secretProblem(secret);
  if (problem) throw invalidConnection([{ path: "secret", reason: problem }]);
  const actor = actorOf(change);
  const nowMs = change.nowMs ?? Date.now();
  if (!isUuid(id)) throw notFound(orgId, id);
  return transact(db, async (client) => {
    const before = await client.query(`SELECT secret_fingerprint FROM connections WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
    if (!before.rows[0]) throw notFound(orgId, id);
    const fingerprint = sealer.fingerprint(secret);
    const { rows } = await client.query(
      `UPDATE connections SET secret_ciphertext = $3, secret_fingerprint = $4,
         rotated_at = to_timestamp($5::double precision / 1000), updated_at = to_timestamp($5::double precision / 1000)
       WHERE org_id = $1 AND id = $2 RETURNING ${CONNECTION_COLUMNS}`,
      [orgId, id, sealer.seal(secret, connectionAad(id)), fingerprint, nowMs],
    );
    const connection = connectionFromRow(rows[0]);
    await audit(client, connection, "rotated", actor, `fingerprint ${before.rows[0].secret_fingerprint as string} -> ${fingerprint}`, nowMs);
    return connection;
  });
}

/** Deletes a connection; replies it made keep their rows (connection_id becomes NULL). Returns what was deleted. */
export async function deleteConnection(db: Db, orgId: string, id: string, change: ConnectionChange): Promise<ConnectionRecord> {
  const actor = actorOf(change);
  const nowMs = change.nowMs ?? Date.now();
  if (!isUuid(id)) throw notFound(orgId, id);
  return transact(db, async (client) => {
    const { rows } = await client.query(`DELETE FROM connections WHERE org_id = $1 AND id = $2 RETURNING ${CONNECTION_COLUMNS}`, [orgId, id]);
    if (!rows[0]) throw notFound(orgId, id);
    const connection = connectionFromRow(rows[0]);
    await audit(client, connection, "deleted", actor, `fingerprint ${connection.fingerprint}`, nowMs);
    return connection;
  });
}

/** The tenant's connections by kind and account. */
export async function listConnections(db: Queryable, orgId: string): Promise<ConnectionRecord[]> {
  const { rows } = await db.query(`SELECT ${CONNECTION_COLUMNS} FROM connections WHERE org_id = $1 ORDER BY kind, account_key`, [orgId]);
  return rows.map(connectionFromRow);
}

export async function getConnection(db: Queryable, orgId: string, id: string): Promise<ConnectionRecord> {
  const connection = await findConnection(db, orgId, id);
  if (!connection) throw notFound(orgId, id);
  return connection;
}

/** The tenant's connection `id`, or undefined (also for another tenant's id). */
export async function findConnection(db: Queryable, orgId: string, id: string): Promise<ConnectionRecord | undefined> {
  if (!isUuid(id)) return undefined;
  const { rows } = await db.query(`SELECT ${CONNECTION_COLUMNS} FROM connections WHERE org_id = $1 AND id = $2`, [orgId, id]);
  return rows[0] ? connectionFromRow(rows[0]) : undefined;
}

/**
 * Records the Slack bot and app ids our own posts carry (from `chat.postMessage`'s answer), so the echo of a post
 * can be recognised. Only fills in or changes them; never touches the secret.
 */
export async function recordConnectionBot(db: Queryable, orgId: string, id: string, ids: { botId?: string | null; appId?: string | null }): Promise<void> {
  if (!isUuid(id)) return;
  await db.query(
    `UPDATE connections SET bot_id = COALESCE($3, bot_id), app_id = COALESCE($4, app_id)
     WHERE org_id = $1 AND id = $2 AND (bot_id IS DISTINCT FROM COALESCE($3, bot_id) OR app_id IS DISTINCT FROM COALESCE($4, app_id))`,
    [orgId, id, ids.botId ?? null, ids.appId ?? null],
  );
}
