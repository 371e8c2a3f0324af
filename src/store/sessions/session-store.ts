/**
 * The console sessions port (issue 27 §2): `console_sessions` (migration 0011), joined with `api_keys` so a session
 * of a revoked key is dead. The console's session logic (gateway/console/session-store.ts) takes it in its options;
 * the Postgres adapter is postgres-session-store.ts. Only token hashes reach it, never a token; times are the caller's.
 */
import type { Queryable } from "../db.js";

/** A live session's API key, as the session lookup reads it. */
export interface LiveSessionRow {
  keyId: string;
  kind: "tenant" | "admin";
  orgId: string | null;
  name: string;
  keyPrefix: string;
  expiresAt: Date;
  lastSeenAt: Date;
}

export interface NewSessionRow {
  tokenHash: string;
  apiKeyId: string;
  source: string;
  nowMs: number;
  expiresAtMs: number;
}

export interface SessionStore {
  /** Deletes sessions past their absolute expiry at `nowMs`. */
  deleteExpired(db: Queryable, nowMs: number): Promise<void>;
  insert(db: Queryable, session: NewSessionRow): Promise<void>;
  /**
   * The session of `tokenHash` if live at `nowMs` (not revoked, nor its key; within its absolute expiry and used
   * within `idleMs`), touched in the same statement when last seen more than `touchEveryMs` ago.
   */
  findLive(db: Queryable, query: { tokenHash: string; nowMs: number; idleMs: number; touchEveryMs: number }): Promise<LiveSessionRow | undefined>;
  /** Signs a session out at `nowMs` (idempotent). */
  revoke(db: Queryable, tokenHash: string, nowMs: number): Promise<void>;
}
