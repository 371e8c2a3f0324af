/**
 * Console sessions in PostgreSQL (`console_sessions`, migration 0011), so every gateway replica accepts every
 * session. The cookie carries an opaque token; the table keeps its sha256 only, and the API key's id rather than
 * the key. A session ends when it is unused for `idleMs`, `maxMs` after sign-in, when signed out, or when its API
 * key is revoked (checked on every use: nothing is cached, as with bearer keys).
 *
 * Times come from `now()` (milliseconds), never from the database clock, so expiry can be tested with a clock.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Queryable } from "../../store/db.js";
import type { Principal } from "../../tenancy/principal.js";

/** Use moves `last_seen_at` forward at most this often, so a busy page does not turn every call into a write. */
const TOUCH_EVERY_MS = 5_000;

export interface SessionTimes {
  /** Unused this long, a session ends (ms). */
  idleMs: number;
  /** A session ends this long after sign-in (ms). */
  maxMs: number;
}

export interface ConsoleSession {
  principal: Principal;
  /** When it ends if unused from now on (the earlier of idle and absolute expiry). */
  expiresAt: Date;
  /** Derived from the token: the header value every cookie-authenticated call must repeat. */
  csrfToken: string;
}

export interface NewConsoleSession extends ConsoleSession {
  /** The cookie's value. Never stored. */
  token: string;
}

export interface SessionStoreOptions extends SessionTimes {
  /** The owner's pool: api_keys and console_sessions are not readable by tenant traffic. */
  db: Queryable;
  /** Milliseconds since the epoch. @defaultValue Date.now */
  now?: () => number;
}

const TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * The CSRF token of a session: a one-way function of the session token, so it needs no column and cannot be
 * computed from the stored hash (a different input than `sha256(token)`).
 */
export function csrfTokenOf(token: string): string {
  return createHash("sha256").update(`switchyard-console-csrf:${token}`, "utf8").digest("base64url");
}

/** Constant-time comparison of the presented CSRF header with the session's. */
export function csrfMatches(token: string, presented: string): boolean {
  const expected = Buffer.from(csrfTokenOf(token));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
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

export class ConsoleSessionStore {
  readonly #db: Queryable;
  readonly #now: () => number;
  readonly times: SessionTimes;

  constructor(options: SessionStoreOptions) {
    this.#db = options.db;
    this.#now = options.now ?? Date.now;
    this.times = { idleMs: options.idleMs, maxMs: options.maxMs };
  }

  /** Opens a session for an API key that was just resolved (its id is `principal.keyId`). */
  async create(principal: Principal, source: string): Promise<NewConsoleSession> {
    const token = randomBytes(32).toString("base64url");
    const now = this.#now();
    // Sessions past their absolute expiry can never be used again; sign-ins are rare enough to tidy them here.
    await this.#db.query("DELETE FROM console_sessions WHERE expires_at < to_timestamp($1::double precision / 1000)", [now]);
    await this.#db.query(
      `INSERT INTO console_sessions (token_hash, api_key_id, source, created_at, last_seen_at, expires_at)
       VALUES ($1, $2, $3, to_timestamp($4::double precision / 1000), to_timestamp($4::double precision / 1000), to_timestamp($5::double precision / 1000))`,
      [sha256(token), principal.keyId, source.slice(0, 100), now, now + this.times.maxMs],
    );
    return { token, principal, csrfToken: csrfTokenOf(token), expiresAt: new Date(Math.min(now + this.times.maxMs, now + this.times.idleMs)) };
  }

  /**
   * The live session of a cookie token, touched as used; undefined when unknown, signed out, expired (idle or
   * absolute) or its API key is revoked.
   */
  async resolve(token: string): Promise<ConsoleSession | undefined> {
    if (!TOKEN_RE.test(token)) return undefined;
    const now = this.#now();
    const { rows } = await this.#db.query<SessionRow>(
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
      [sha256(token), now, this.times.idleMs, TOUCH_EVERY_MS],
    );
    const row = rows[0];
    if (!row) return undefined;
    const identity = { keyId: row.key_id, keyName: row.name, keyPrefix: row.key_prefix };
    const principal: Principal = row.kind === "admin" ? { kind: "admin", ...identity } : { kind: "tenant", orgId: row.org_id!, ...identity };
    return { principal, csrfToken: csrfTokenOf(token), expiresAt: new Date(Math.min(row.expires_at.getTime(), now + this.times.idleMs)) };
  }

  /** Signs a session out (idempotent; an unknown token changes nothing). */
  async revoke(token: string): Promise<void> {
    if (!TOKEN_RE.test(token)) return;
    await this.#db.query("UPDATE console_sessions SET revoked_at = COALESCE(revoked_at, to_timestamp($2::double precision / 1000)) WHERE token_hash = $1", [
      sha256(token),
      this.#now(),
    ]);
  }
}
