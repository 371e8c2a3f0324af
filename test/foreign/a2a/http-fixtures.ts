/**
 * Small local HTTP servers for the A2A tests: a push receiver (our side of a push notification) and a raw server
 * whose answers a test scripts (broken agents the SDK cannot be made to play).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedPush {
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  contentType: string | undefined;
  body: Buffer;
}

export interface PushReceiver {
  /** Base URL; post pushes to any path under it. */
  readonly url: string;
  readonly pushes: ReceivedPush[];
  /** Resolves with all pushes once `done(pushes)` holds, rejects after `timeoutMs`. */
  waitFor(done: (pushes: ReceivedPush[]) => boolean, timeoutMs?: number): Promise<ReceivedPush[]>;
  close(): Promise<void>;
}

export async function startPushReceiver(): Promise<PushReceiver> {
  const pushes: ReceivedPush[] = [];
  const waiters = new Set<() => void>();
  const server = await listen(async (req, res) => {
    const body = await readBody(req);
    const url = new URL(req.url ?? "/", "http://receiver");
    pushes.push({ path: url.pathname, query: url.searchParams, headers: req.headers, contentType: req.headers["content-type"], body });
    res.statusCode = 200;
    res.end();
    for (const wake of waiters) wake();
  });
  return {
    url: baseUrl(server),
    pushes,
    waitFor(done, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!done(pushes)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(pushes);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`push receiver: condition not met within ${timeoutMs} ms (${pushes.length} pushes)`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => closeServer(server),
  };
}

export interface RawServer {
  readonly url: string;
  readonly requests: Array<{ method: string; path: string; headers: IncomingHttpHeaders; body: string }>;
  close(): Promise<void>;
}

/** A server that answers every request with `respond` (which may also never answer). */
export async function startRawServer(respond: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<RawServer> {
  const requests: RawServer["requests"] = [];
  const server = await listen(async (req, res) => {
    const body = (await readBody(req)).toString("utf8");
    requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body });
    respond(req, res, body);
  });
  return { url: baseUrl(server), requests, close: () => closeServer(server) };
}

/** A URL on 127.0.0.1 where nothing listens. */
export async function deadUrl(): Promise<string> {
  const server = await listen((_req, res) => void res.end());
  const url = baseUrl(server);
  await closeServer(server);
  return url;
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>): Promise<Server> {
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}

function baseUrl(server: Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
