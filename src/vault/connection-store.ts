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
 * it there. The rows are read and written through the connections port (store/vault/connection-store.ts), which
 * filters by the tenant explicitly; API traffic also runs under row-level security.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { isUuid, operatorChangeEntry } from "../domain.js";
import type { AuditStore } from "../store/audit/audit-store.js";
import { withTransaction, type Pool, type PoolClient, type Queryable } from "../store/db.js";
import type { ConnectionRecord, ConnectionStore } from "../store/vault/connection-store.js";
import { connectionAad } from "./connection-record.js";
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

/** What a change writes through (`runtime.stores`): the connection row and, in the same transaction, its audit row. */
export interface ConnectionStores {
  connections: ConnectionStore;
  audit: Pick<AuditStore, "append">;
}

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

async function audit(
  stores: ConnectionStores,
  client: PoolClient,
  connection: ConnectionRecord,
  verdict: "added" | "rotated" | "deleted",
  actor: string,
  reason: string,
  nowMs: number,
): Promise<void> {
  await stores.audit.append(client, [
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
export async function addConnection(stores: ConnectionStores, db: Db, cipher: SecretCipher | undefined, orgId: string, input: ConnectionInput, change: ConnectionChange): Promise<ConnectionRecord> {
  const sealer = requireCipher(cipher, "adding a connection");
  const normal = normaliseConnectionInput(input);
  const actor = actorOf(change);
  const nowMs = change.nowMs ?? Date.now();
  const id = randomUUID();
  const ciphertext = sealer.seal(input.secret, connectionAad(id));
  const fingerprint = sealer.fingerprint(input.secret);
  return transact(db, async (client) => {
    const connection = await stores.connections.insert(client, {
      id,
      orgId,
      kind: normal.kind,
      accountKey: normal.accountKey,
      apiBaseUrl: normal.apiBaseUrl,
      targets: normal.targets,
      secretCiphertext: ciphertext,
      secretFingerprint: fingerprint,
      createdBy: actor,
      nowMs,
    });
    if (!connection) {
      throw new SwitchyardError(
        ErrorCode.AlreadyExists,
        `tenant ${orgId} already has a ${normal.kind} connection for ${normal.accountKey}; rotate its secret or delete it first (connection list shows its id)`,
        { details: { path: "account_key", orgId, kind: normal.kind, accountKey: normal.accountKey } },
      );
    }
    await audit(stores, client, connection, "added", actor, `fingerprint ${fingerprint}; api ${connection.apiBaseUrl}; targets ${connection.targets.join(",") || "*"}`, nowMs);
    return connection;
  });
}

/** Replaces the secret (sealed afresh under the current key). NOT_FOUND for another tenant's or an unknown id. */
export async function rotateConnection(stores: ConnectionStores, db: Db, cipher: SecretCipher | undefined, orgId: string, id: string, secret: string, change: ConnectionChange): Promise<ConnectionRecord> {
  const sealer = requireCipher(cipher, "rotating a connection's secret");
  const problem = secretProblem(secret);
  if (problem) throw invalidConnection([{ path: "secret", reason: problem }]);
  const actor = actorOf(change);
  const nowMs = change.nowMs ?? Date.now();
  if (!isUuid(id)) throw notFound(orgId, id);
  return transact(db, async (client) => {
    const before = await stores.connections.lockFingerprint(client, orgId, id);
    if (before === undefined) throw notFound(orgId, id);
    const fingerprint = sealer.fingerprint(secret);
    const connection = await stores.connections.replaceSecret(client, orgId, id, { ciphertext: sealer.seal(secret, connectionAad(id)), fingerprint, nowMs });
    await audit(stores, client, connection, "rotated", actor, `fingerprint ${before} -> ${fingerprint}`, nowMs);
    return connection;
  });
}

/** Deletes a connection; replies it made keep their rows (connection_id becomes NULL). Returns what was deleted. */
export async function deleteConnection(stores: ConnectionStores, db: Db, orgId: string, id: string, change: ConnectionChange): Promise<ConnectionRecord> {
  const actor = actorOf(change);
  const nowMs = change.nowMs ?? Date.now();
  if (!isUuid(id)) throw notFound(orgId, id);
  return transact(db, async (client) => {
    const connection = await stores.connections.delete(client, orgId, id);
    if (!connection) throw notFound(orgId, id);
    await audit(stores, client, connection, "deleted", actor, `fingerprint ${connection.fingerprint}`, nowMs);
    return connection;
  });
}

/** The tenant's connections by kind and account. */
export async function listConnections(connections: Pick<ConnectionStore, "list">, db: Queryable, orgId: string): Promise<ConnectionRecord[]> {
  return connections.list(db, orgId);
}

export async function getConnection(connections: Pick<ConnectionStore, "find">, db: Queryable, orgId: string, id: string): Promise<ConnectionRecord> {
  const connection = await findConnection(connections, db, orgId, id);
  if (!connection) throw notFound(orgId, id);
  return connection;
}

/** The tenant's connection `id`, or undefined (also for another tenant's id). */
export async function findConnection(connections: Pick<ConnectionStore, "find">, db: Queryable, orgId: string, id: string): Promise<ConnectionRecord | undefined> {
  if (!isUuid(id)) return undefined;
  return connections.find(db, orgId, id);
}

/**
 * Records the Slack bot and app ids our own posts carry (from `chat.postMessage`'s answer), so the echo of a post
 * can be recognised. Only fills in or changes them; never touches the secret.
 */
export async function recordConnectionBot(connections: Pick<ConnectionStore, "recordBot">, db: Queryable, orgId: string, id: string, ids: { botId?: string | null; appId?: string | null }): Promise<void> {
  if (!isUuid(id)) return;
  await connections.recordBot(db, orgId, id, { botId: ids.botId ?? null, appId: ids.appId ?? null });
}
