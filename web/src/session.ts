/**
 * The console session: the API key is sent once, to POST /console/session, and never kept — the gateway answers
 * with an HttpOnly cookie (which this code cannot read) and a CSRF token that every API call echoes.
 */

export interface Session {
  tenant: string;
  admin: boolean;
  csrfToken: string;
  expiresAt: string;
}

export class SessionError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

async function answer(res: Response): Promise<Session> {
  const body = (await res.json().catch(() => ({}))) as Partial<Session> & { message?: string };
  if (!res.ok) throw new SessionError(body.message ?? `sign-in failed (HTTP ${res.status})`, res.status);
  return body as Session;
}

export async function signIn(apiKey: string): Promise<Session> {
  const res = await fetch("/console/session", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ apiKey }),
  });
  return answer(res);
}

/** The live session, or undefined when there is none (401). */
export async function currentSession(): Promise<Session | undefined> {
  const res = await fetch("/console/session", { credentials: "same-origin" });
  if (res.status === 401) return undefined;
  return answer(res);
}

export async function signOut(csrfToken: string): Promise<void> {
  await fetch("/console/session", { method: "DELETE", credentials: "same-origin", headers: { "x-csrf-token": csrfToken } });
}
