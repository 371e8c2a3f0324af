/**
 * `/console/session`: sign in (POST, an API key for a session cookie), who am I (GET), sign out (DELETE).
 *
 * Sign-in resolves the key with the same function as bearer auth (`resolveApiKey`): unknown and revoked keys are
 * refused alike, admin keys sign in as admin. Answers are JSON `{tenant, admin, csrfToken, expiresAt}`, errors
 * `{code, message}` with the codes of the Connect API.
 *
 * Failed sign-ins are counted per client address (`X-Forwarded-For` read through the trusted proxies only,
 * gateway/client-address.ts). A key that resolves always signs in, whatever its address has failed: behind an
 * Ingress many people share an address, and one of them sending bogus keys must not lock the others out.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { ErrorCode, SwitchyardError, isSwitchyardError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { readBody } from "../../read-body.js";
import type { Queryable } from "../../store/db.js";
import { resolveApiKey } from "../../tenancy/api-keys.js";
import type { ApiKeyStore } from "../../store/tenancy/tenancy-store.js";
import { CONSOLE_SECURITY_HEADERS, sendConsoleJson } from "./console-headers.js";
import { clearedSessionCookie, sessionCookie } from "./cookies.js";
import { checkCsrf, isOwnOrigin, requestSessionToken, type HeaderSource } from "./session-auth.js";
import type { ConsoleSession, ConsoleSessionStore } from "./session-store.js";
import type { SignInLimiter } from "./sign-in-limiter.js";
import { requestClientAddress, type TrustedProxies } from "../client-address.js";

export const SESSION_PATH = "/console/session";
const MAX_BODY_BYTES = 4096;

export interface SessionRouteDeps {
  /** The owner's pool: where API keys are resolved. */
  db: Queryable;
  /** The API keys port (`runtime.stores.apiKeys`), read on `db`. */
  keys: Pick<ApiKeyStore, "findByHashes">;
  sessions: ConsoleSessionStore;
  limiter: SignInLimiter;
  /** Whose `X-Forwarded-For` names the client that failures are counted against; empty: the socket peer is. */
  trustedProxies: TrustedProxies;
  publicUrl?: string;
  logger: Logger;
}

const STATUS: Partial<Record<ErrorCode, number>> = {
  [ErrorCode.InvalidArgument]: 400,
  [ErrorCode.Unauthenticated]: 401,
  [ErrorCode.PermissionDenied]: 403,
  [ErrorCode.ResourceExhausted]: 429,
};

export function nodeHeaders(req: IncomingMessage): HeaderSource {
  return {
    get(name) {
      const value = req.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(", ") : (value ?? null);
    },
  };
}

/** The browser reached us over https: a TLS socket, or a proxy in front saying so. */
function overHttps(req: IncomingMessage): boolean {
  return (req.socket as Partial<TLSSocket>).encrypted === true || req.headers["x-forwarded-proto"] === "https";
}

function view(session: ConsoleSession): Record<string, unknown> {
  const principal = session.principal;
  return { tenant: principal.kind === "tenant" ? principal.orgId : "", admin: principal.kind === "admin", csrfToken: session.csrfToken, expiresAt: session.expiresAt.toISOString() };
}

export async function handleSessionRoute(req: IncomingMessage, res: ServerResponse, deps: SessionRouteDeps): Promise<void> {
  try {
    if (req.method === "POST") return await signIn(req, res, deps);
    if (req.method === "GET" || req.method === "HEAD") {
      const session = await authenticateSessionCookieOnly(req, deps);
      return sendConsoleJson(res, 200, view(session));
    }
    if (req.method === "DELETE") return await signOut(req, res, deps);
    sendConsoleJson(res, 405, { code: "METHOD_NOT_ALLOWED", message: "POST signs in, GET shows the session, DELETE signs out" }, { allow: "GET, HEAD, POST, DELETE" });
  } catch (error) {
    if (!isSwitchyardError(error) || STATUS[error.code] === undefined) throw error;
    const headers: Record<string, string> = {};
    const retryAfterMs = error.details.retryAfterMs;
    if (typeof retryAfterMs === "number") headers["retry-after"] = String(Math.ceil(retryAfterMs / 1000));
    sendConsoleJson(res, STATUS[error.code]!, { code: error.code, message: error.message }, headers);
  }
}

async function signIn(req: IncomingMessage, res: ServerResponse, deps: SessionRouteDeps): Promise<void> {
  const source = requestClientAddress(req, deps.trustedProxies);
  // Another site's page must not sign a visitor in as someone else (login CSRF): browsers send Origin on POST.
  const origin = req.headers.origin;
  if (origin !== undefined && !isOwnOrigin(origin, req.headers.host ?? null, deps.publicUrl)) {
    throw new SwitchyardError(ErrorCode.PermissionDenied, `console sign-in is accepted only from the gateway's own pages, not from origin ${origin}`);
  }
  const apiKey = parseSignIn(await readBody(req, MAX_BODY_BYTES));
  // The key is resolved before the limiter is asked, even for an address over its limit: a key that resolves signs
  // in whatever its address has failed (people behind one proxy or NAT share an address; one of them guessing
  // must not lock the rest out), and its success neither counts nor resets the failures. That makes the refusal an
  // answer to a wrong key only, so an address over its limit still learns whether a guess was right: the limit
  // alone does not stop guessing. The keys do: 32 random bytes (256 bits, tenancy/api-keys.ts) are not guessed at
  // any request rate. The limit keeps failing clients at 429 with Retry-After, and the log free of their repeats.
  const resolved = await resolveApiKey(deps.keys, deps.db, apiKey);
  if (resolved.status !== "ok") {
    const wait = deps.limiter.retryAfterMs(source);
    // Over the limit: refused without counting, so a client that keeps failing holds at most `maxFailures` entries
    // and is free again once its counted failures age out of the window. (Bearer calls to the API resolve keys
    // without any limit; resolving here too adds no new way to load the database.)
    if (wait > 0) {
      throw new SwitchyardError(ErrorCode.ResourceExhausted, `too many failed sign-ins from this address; try again in ${Math.ceil(wait / 1000)} s`, { details: { retryAfterMs: wait } });
    }
    deps.limiter.recordFailure(source);
    deps.logger.info({ source, reason: resolved.status }, "console sign-in refused");
    throw new SwitchyardError(ErrorCode.Unauthenticated, resolved.status === "revoked" ? `API key ${resolved.prefix}… is revoked` : "unknown API key");
  }
  const session = await deps.sessions.create(resolved.principal, source);
  const principal = resolved.principal;
  deps.logger.info({ tenant: principal.kind === "tenant" ? principal.orgId : undefined, keyId: principal.keyId, source }, "console sign-in");
  sendConsoleJson(res, 200, view(session), { "set-cookie": sessionCookie(session.token, deps.sessions.times.maxMs, overHttps(req)) });
}

function parseSignIn(body: string | undefined): string {
  if (body === undefined) throw new SwitchyardError(ErrorCode.InvalidArgument, `the sign-in body is larger than ${MAX_BODY_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new SwitchyardError(ErrorCode.InvalidArgument, 'the sign-in body must be JSON: {"apiKey":"sy_…"}');
  }
  const apiKey = (parsed as { apiKey?: unknown } | null)?.apiKey;
  if (typeof apiKey !== "string" || apiKey.trim() === "") {
    throw new SwitchyardError(ErrorCode.InvalidArgument, 'apiKey: the sign-in body must be {"apiKey":"sy_…"}', { details: { path: "apiKey" } });
  }
  return apiKey.trim();
}

/** GET needs no CSRF token: it changes nothing, and SameSite=Strict keeps other sites' requests cookie-less. */
async function authenticateSessionCookieOnly(req: IncomingMessage, deps: SessionRouteDeps): Promise<ConsoleSession> {
  const token = requestSessionToken(nodeHeaders(req));
  const session = token === undefined ? undefined : await deps.sessions.resolve(token);
  if (!session) throw new SwitchyardError(ErrorCode.Unauthenticated, "not signed in to the console (or the session expired); POST /console/session with an API key");
  return session;
}

async function signOut(req: IncomingMessage, res: ServerResponse, deps: SessionRouteDeps): Promise<void> {
  const headers = nodeHeaders(req);
  const token = requestSessionToken(headers);
  if (token !== undefined) {
    checkCsrf(headers, token, deps.publicUrl);
    await deps.sessions.revoke(token);
  }
  res.writeHead(204, { ...CONSOLE_SECURITY_HEADERS, "set-cookie": clearedSessionCookie(overHttps(req)), "cache-control": "no-store" });
  res.end();
}

