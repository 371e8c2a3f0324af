/**
 * Headers of every console response (static files, the session route, the not-built page). The CSP allows only
 * the gateway's own origin, no inline script or style, no framing: the console holds a session that can approve
 * steps and flip flags, so an injected script or a clickjacking frame must find nothing to run in.
 */
import type { ServerResponse } from "node:http";

export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

/** A JSON answer with the console's headers; never cached (it may carry a CSRF token). */
export function sendConsoleJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, {
    ...CONSOLE_SECURITY_HEADERS,
    ...headers,
    "content-type": "application/json",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

export function sendConsoleText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    ...CONSOLE_SECURITY_HEADERS,
    ...headers,
    "content-type": "text/plain; charset=utf-8",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}
