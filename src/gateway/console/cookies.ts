/**
 * The console's session cookie: reading it from a `Cookie` header and writing `Set-Cookie`. HttpOnly (scripts,
 * including an injected one, cannot read it), SameSite=Strict (another site's page never sends it), Path=/ (the
 * Connect routes are outside /console), Secure when the browser reached us over https.
 */
export const SESSION_COOKIE = "switchyard_session";
export const CSRF_HEADER = "x-csrf-token";

/** The session token in a `Cookie` header, if any. */
export function sessionTokenOf(cookieHeader: string | null | undefined): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

export function sessionCookie(token: string, maxAgeMs: number, secure: boolean): string {
  const maxAge = Math.max(0, Math.floor(maxAgeMs / 1000));
  return `${SESSION_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAge}${secure ? "; Secure" : ""}`;
}

export function clearedSessionCookie(secure: boolean): string {
  return sessionCookie("", 0, secure);
}
