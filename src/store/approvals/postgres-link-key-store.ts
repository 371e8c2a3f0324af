/**
 * The Postgres adapters of the LinkKeyStore and UsedLinkTokenStore ports (approval-store.ts): per-tenant HMAC keys
 * for signed links (`link_keys`) and the hashes of the link tokens redeemed (`used_link_tokens`). Secrets never
 * leave here except to sign or verify. One SQL operation per function.
 */
import { randomBytes } from "node:crypto";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { Queryable } from "../db.js";
import type { LinkKey, LinkKeyInfo, LinkKeyStore, UsedLinkTokenStore } from "./approval-store.js";

export function createPostgresLinkKeyStore(): LinkKeyStore {
  return { ensure: ensureLinkKey, rotate: rotateLinkKey, retire: retireLinkKey, get: getLinkKey, list: listLinkKeys };
}

export function createPostgresUsedLinkTokenStore(): UsedLinkTokenStore {
  return { wasUsed: linkTokenWasUsed, record: recordUsedLinkToken };
}

const SECRET_BYTES = 32;

/** Hex, so a kid never starts with "-" on a command line. */
function newKid(): string {
  return randomBytes(6).toString("hex");
}

function toKey(row: Record<string, unknown>): LinkKey {
  return {
    orgId: row.org_id as string,
    kid: row.kid as string,
    secret: row.secret as Buffer,
    createdAt: (row.created_at as Date).toISOString(),
    retiredAt: row.retired_at ? (row.retired_at as Date).toISOString() : null,
  };
}

async function signingKey(db: Queryable, orgId: string): Promise<LinkKey | undefined> {
  const { rows } = await db.query(
    `SELECT org_id, kid, secret, created_at, retired_at FROM link_keys
     WHERE org_id = $1 AND retired_at IS NULL ORDER BY created_at DESC, kid DESC LIMIT 1`,
    [orgId],
  );
  return rows[0] ? toKey(rows[0]) : undefined;
}

async function insertKey(db: Queryable, orgId: string): Promise<LinkKey> {
  // clock_timestamp, not now(): two rotations in one transaction must still order.
  const { rows } = await db.query(
    `INSERT INTO link_keys (org_id, kid, secret, created_at) VALUES ($1, $2, $3, clock_timestamp())
     RETURNING org_id, kid, secret, created_at, retired_at`,
    [orgId, newKid(), randomBytes(SECRET_BYTES)],
  );
  return toKey(rows[0]!);
}

/**
 * The tenant's signing key, created on first use. Creation is serialised per tenant with a transaction-scoped
 * advisory lock, so concurrent first uses inside transactions (the first hops of a new tenant) share one key; a
 * caller outside a transaction may still race another and create a second key — both verify, the newer signs.
 */
export async function ensureLinkKey(db: Queryable, orgId: string): Promise<LinkKey> {
  const existing = await signingKey(db, orgId);
  if (existing) return existing;
  await lockKeyCreation(db, orgId);
  // Read again under the lock: a transaction that held it before us has committed its key by now.
  return (await signingKey(db, orgId)) ?? insertKey(db, orgId);
}

async function lockKeyCreation(db: Queryable, orgId: string): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`switchyard/link-key/${orgId}`]);
}

/** Creates a new signing key and returns its kid. Older keys keep verifying until retired. */
export async function rotateLinkKey(db: Queryable, orgId: string): Promise<string> {
  return (await insertKey(db, orgId)).kid;
}

/**
 * Retires a key: links signed with it stop working at once. Retiring the signing key makes the next link use
 * the newest remaining key (or a fresh one). NOT_FOUND when the tenant has no such key.
 */
export async function retireLinkKey(db: Queryable, orgId: string, kid: string): Promise<{ kid: string; retiredAt: string }> {
  const { rows } = await db.query<{ retired_at: Date }>(
    `UPDATE link_keys SET retired_at = coalesce(retired_at, now()) WHERE org_id = $1 AND kid = $2 RETURNING retired_at`,
    [orgId, kid],
  );
  if (!rows[0]) throw new SwitchyardError(ErrorCode.NotFound, `no link key ${kid} for tenant ${orgId}`);
  return { kid, retiredAt: rows[0].retired_at.toISOString() };
}

/** One key of one tenant, retired or not; undefined when the tenant has no such kid. */
export async function getLinkKey(db: Queryable, orgId: string, kid: string): Promise<LinkKey | undefined> {
  const { rows } = await db.query(`SELECT org_id, kid, secret, created_at, retired_at FROM link_keys WHERE org_id = $1 AND kid = $2`, [orgId, kid]);
  return rows[0] ? toKey(rows[0]) : undefined;
}

/** The tenant's keys, newest first, without secrets. */
export async function listLinkKeys(db: Queryable, orgId: string): Promise<LinkKeyInfo[]> {
  const { rows } = await db.query<{ kid: string; created_at: Date; retired_at: Date | null }>(
    `SELECT kid, created_at, retired_at FROM link_keys WHERE org_id = $1 ORDER BY created_at DESC, kid DESC`,
    [orgId],
  );
  // Same order as signingKey(): the first key not retired signs.
  const signing = rows.find((r) => r.retired_at === null)?.kid;
  return rows.map((r) => ({
    kid: r.kid,
    createdAt: r.created_at.toISOString(),
    retiredAt: r.retired_at ? r.retired_at.toISOString() : null,
    signing: r.kid === signing,
  }));
}

export async function linkTokenWasUsed(db: Queryable, tokenHash: string): Promise<boolean> {
  const used = await db.query("SELECT 1 FROM used_link_tokens WHERE token_hash = $1", [tokenHash]);
  return used.rows.length > 0;
}

export async function recordUsedLinkToken(tx: Queryable, used: { tokenHash: string; orgId: string; subject: string }): Promise<void> {
  await tx.query("INSERT INTO used_link_tokens (token_hash, org_id, subject) VALUES ($1, $2, $3)", [used.tokenHash, used.orgId, used.subject]);
}
