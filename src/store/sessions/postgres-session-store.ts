/**
 * The Postgres adapter of the console sessions port (session-store.ts). Times come in as milliseconds from the
 * caller's clock, never from the database's, so expiry can be tested with a clock.
 */
import type { Queryable } from "../db.js";
import type { LiveSessionRow, NewSessionRow, SessionStore } from "./session-store.js";

export async function deleteExpiredSessions(db: Queryable, nowMs: number): Promise<void> {
  await db.query("DELETE FROM console_sessions WHERE expires_at < to_timestamp($1::double precision / 1000)", [nowMs]);
}

export async function insertSession(db: Queryable, session: NewSessionRow): Promise<void> {
  await db.query(
    `INSERT INTO console_sessions (token_hash, api_key_id, source, created_at, last_seen_at, expires_at)
     VALUES ($1, $2, $3, to_timestamp($4::double precision / 1000), to_timestamp($4::double precision / 1000), to_timestamp($5::double precision / 1000))`,
    [session.tokenHash, session.apiKeyId, session.source, session.nowMs, session.expiresAtMs],
  );
}

interface SessionRow {
  key_id: string;
  kind: "tenant" | "admin";
  org_id: string | null;
  name: string;
  key_prefix: string;
  expires_at: Date;
  last_seen_at: Date;
}

export async function findLiveSession(db: Queryable, query: { tokenHash: string; nowMs: number; idleMs: number; touchEveryMs: number }): Promise<LiveSessionRow | undefined> {
  const { rows } = await db.query<SessionRow>(
    `WITH live AS (
       SELECT s.token_hash, s.expires_at, s.last_seen_at, k.id AS key_id, k.kind, k.org_id, k.name, k.key_prefix
       FROM console_sessions s JOIN api_keys k ON k.id = s.api_key_id
       WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND k.revoked_at IS NULL
         AND s.expires_at > to_timestamp($2::double precision / 1000)
         AND s.last_seen_at > to_timestamp(($2::double precision - $3) / 1000)
     ), touched AS (
       UPDATE console_sessions SET last_seen_at = to_timestamp($2::double precision / 1000)
       WHERE token_hash IN (SELECT token_hash FROM live) AND last_seen_at < to_timestamp(($2::double precision - $4) / 1000)
     )
     SELECT key_id, kind, org_id, name, key_prefix, expires_at, last_seen_at FROM live`,
    [query.tokenHash, query.nowMs, query.idleMs, query.touchEveryMs],
  );
  const row = rows[0];
  if (!row) return undefined;
  return { keyId: row.key_id, kind: row.kind, orgId: row.org_id, name: row.name, keyPrefix: row.key_prefix, expiresAt: row.expires_at, lastSeenAt: row.last_seen_at };
}

export async function revokeSession(db: Queryable, tokenHash: string, nowMs: number): Promise<void> {
  await db.query("UPDATE console_sessions SET revoked_at = COALESCE(revoked_at, to_timestamp($2::double precision / 1000)) WHERE token_hash = $1", [tokenHash, nowMs]);
}

export function createPostgresSessionStore(): SessionStore {
  return { deleteExpired: deleteExpiredSessions, insert: insertSession, findLive: findLiveSession, revoke: revokeSession };
}
