/**
 * Plain-HTTP helpers for the console tests: sign in, call the Connect API with the session cookie (as the console's
 * page does), and raw requests whose path fetch would normalise.
 */
import { request } from "node:http";
import { postJson } from "./fixture.js";

export interface SignedIn {
  status: number;
  body: any;
  /** The whole Set-Cookie header. */
  setCookie: string;
  /** `switchyard_session=…`, ready for a Cookie header. */
  cookie: string;
  csrfToken: string;
}

export async function signIn(url: string, apiKey: unknown, headers: Record<string, string> = {}): Promise<SignedIn> {
  const res = await fetch(`${url}/console/session`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ apiKey }),
  });
  const body = (await res.json()) as any;
  const setCookie = res.headers.get("set-cookie") ?? "";
  return { status: res.status, body, setCookie, cookie: setCookie.split(";")[0]!, csrfToken: body.csrfToken };
}

/**
 * `signIn` over a connection from `localAddress`: any 127.x.y.z reaches a gateway on 127.0.0.1, so a test can be
 * another socket peer (a client beside the proxy, say) without another machine.
 */
export function signInFrom(url: string, apiKey: unknown, localAddress: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(url);
  const payload = JSON.stringify({ apiKey });
  return new Promise((resolve, reject) => {
    const req = request(
      { host: hostname, port, path: "/console/session", method: "POST", localAddress, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** A Connect JSON call authenticated by a console session; `csrfToken: null` leaves the header out. */
export async function sessionCall(
  url: string,
  path: string,
  body: unknown,
  session: { cookie: string; csrfToken: string | null },
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const { status, body: answer } = await postJson(url, path, body, undefined, {
    cookie: session.cookie,
    ...(session.csrfToken === null ? {} : { "x-csrf-token": session.csrfToken }),
    ...headers,
  });
  return { status, body: answer };
}

/** GET with the path sent as written (fetch would resolve `..` before sending). */
export function rawGet(url: string, path: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path, method: "GET" }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}
