/**
 * A console session standing in for `Authorization: Bearer`: the cookie says who, and a request must prove it came
 * from the console's own page — `X-CSRF-Token` equal to the session's token (a page on another site cannot read
 * it), and an `Origin`, when the browser sends one, equal to the gateway's own. Checked before the database is
 * asked, so a forged request costs no query.
 */
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { CSRF_HEADER, sessionTokenOf } from "./cookies.js";
import { csrfMatches, type ConsoleSession, type ConsoleSessionStore } from "./session-store.js";

/** What is read from a request: Connect's `Headers` and a Node request both fit through `get`. */
export interface HeaderSource {
  get(name: string): string | null;
}

export interface SessionAuthOptions {
  sessions: ConsoleSessionStore;
  /** config.gateway.publicUrl: its origin is ours too (behind a proxy the Host header may differ). */
  publicUrl?: string;
}

/** Whether `origin` is the gateway's own: the origin the browser addressed (`Host`), or the public URL's. */
export function isOwnOrigin(origin: string, host: string | null, publicUrl: string | undefined): boolean {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  if (host && (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.host === host.toLowerCase()) return true;
  if (!publicUrl) return false;
  try {
    return new URL(publicUrl).origin === parsed.origin;
  } catch {
    return false;
  }
}

/** The session token of a request's cookie, if it has one. */
export function requestSessionToken(headers: HeaderSource): string | undefined {
  return sessionTokenOf(headers.get("cookie"));
}

/**
 * Checks a cookie-carrying request's CSRF token and origin; throws PERMISSION_DENIED saying which check failed.
 */
export function checkCsrf(headers: HeaderSource, token: string, publicUrl: string | undefined): void {
  const presented = headers.get(CSRF_HEADER);
  if (!presented) {
    throw new SwitchyardError(
      ErrorCode.PermissionDenied,
      "a console session must send the `X-CSRF-Token` header with the token its sign-in returned; other sites' pages cannot, so this request was refused",
    );
  }
  if (!csrfMatches(token, presented)) throw new SwitchyardError(ErrorCode.PermissionDenied, "the `X-CSRF-Token` header does not match this console session; sign in again");
  const origin = headers.get("origin");
  if (origin !== null && !isOwnOrigin(origin, headers.get("host"), publicUrl)) {
    throw new SwitchyardError(ErrorCode.PermissionDenied, `a console session is accepted only from the gateway's own pages, not from origin ${origin}`);
  }
}

/**
 * The live session behind a request's cookie, its CSRF token and origin checked; undefined when the request has
 * no session cookie (bearer auth or nothing applies). An expired, signed-out or revoked session is UNAUTHENTICATED.
 */
export async function authenticateSession(headers: HeaderSource, options: SessionAuthOptions): Promise<ConsoleSession | undefined> {
  const token = requestSessionToken(headers);
  if (token === undefined) return undefined;
  checkCsrf(headers, token, options.publicUrl);
  const session = await options.sessions.resolve(token);
  if (!session) {
    throw new SwitchyardError(ErrorCode.Unauthenticated, "the console session has expired, was signed out, or its API key was revoked; sign in again");
  }
  return session;
}
