/**
 * Console sessions, kept in PostgreSQL through the sessions port (store/sessions/session-store.ts), so every gateway
 * replica accepts every session. The cookie carries an opaque token; the table keeps its sha256 only, and the API key's id rather than
 * the key. A session ends when it is unused for `idleMs`, `maxMs` after sign-in, when signed out, or when its API
 * key is revoked (checked on every use: nothing is cached, as with bearer keys).
 *
 * Times come from `now()` (milliseconds), never from the database clock, so expiry can be tested with a clock.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Queryable } from "../../store/db.js";
import type { SessionStore } from "../../store/sessions/session-store.js";
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
  /** The sessions port (runtime.stores.sessions). */
  store: SessionStore;
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

export class ConsoleSessionStore {
  readonly #db: Queryable;
  readonly #store: SessionStore;
  readonly #now: () => number;
  readonly times: SessionTimes;

  constructor(options: SessionStoreOptions) {
    this.#db = options.db;
    this.#store = options.store;
    this.#now = options.now ?? Date.now;
    this.times = { idleMs: options.idleMs, maxMs: options.maxMs };
  }

  /** Opens a session for an API key that was just resolved (its id is `principal.keyId`). */
  async create(principal: Principal, source: string): Promise<NewConsoleSession> {
    const token = randomBytes(32).toString("base64url");
    const now = this.#now();
    // Sessions past their absolute expiry can never be used again; sign-ins are rare enough to tidy them here.
    await this.#store.deleteExpired(this.#db, now);
    await this.#store.insert(this.#db, { tokenHash: sha256(token), apiKeyId: principal.keyId, source: source.slice(0, 100), nowMs: now, expiresAtMs: now + this.times.maxMs });
    return { token, principal, csrfToken: csrfTokenOf(token), expiresAt: new Date(Math.min(now + this.times.maxMs, now + this.times.idleMs)) };
  }

  /**
   * The live session of a cookie token, touched as used; undefined when unknown, signed out, expired (idle or
   * absolute) or its API key is revoked.
   */
  async resolve(token: string): Promise<ConsoleSession | undefined> {
    if (!TOKEN_RE.test(token)) return undefined;
    const now = this.#now();
    const row = await this.#store.findLive(this.#db, { tokenHash: sha256(token), nowMs: now, idleMs: this.times.idleMs, touchEveryMs: TOUCH_EVERY_MS });
    if (!row) return undefined;
    const identity = { keyId: row.keyId, keyName: row.name, keyPrefix: row.keyPrefix };
    const principal: Principal = row.kind === "admin" ? { kind: "admin", ...identity } : { kind: "tenant", orgId: row.orgId!, ...identity };
    return { principal, csrfToken: csrfTokenOf(token), expiresAt: new Date(Math.min(row.expiresAt.getTime(), now + this.times.idleMs)) };
  }

  /** Signs a session out (idempotent; an unknown token changes nothing). */
  async revoke(token: string): Promise<void> {
    if (!TOKEN_RE.test(token)) return;
    await this.#store.revoke(this.#db, sha256(token), this.#now());
  }
}
