/**
 * Real servers on loopback for the egress tests, each counting what reaches it, and a counter of client sockets the
 * process opens (node's `net.client.socket` diagnostics channel), to prove a refusal happened before any connection.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from "node:net";
import { TEST_CERT, TEST_KEY } from "./tls-fixture.js";

export interface SeenRequest {
  method: string;
  url: string;
  host: string | undefined;
  /** The address the client connected to (our side of the socket). */
  localAddress: string | undefined;
  body: string;
  headers: IncomingMessage["headers"];
}

export interface TestServer {
  host: string;
  port: number;
  /** `http://host:port` (brackets for IPv6). */
  origin: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

export interface ServerOptions {
  host?: string;
  port?: number;
  tls?: boolean;
}

export async function startServer(handler: Handler, options: ServerOptions = {}): Promise<TestServer> {
  const host = options.host ?? "127.0.0.1";
  const requests: SeenRequest[] = [];
  const sockets = new Set<Socket>();
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      requests.push({ method: req.method ?? "", url: req.url ?? "", host: req.headers.host, localAddress: req.socket.localAddress, body, headers: req.headers });
      handler(req, res, body);
    });
  };
  const server: Server = options.tls ? createHttpsServer({ cert: TEST_CERT, key: TEST_KEY }, listener) : createHttpServer(listener);
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.on("secureConnection", (s: Socket) => sockets.add(s));
  await listen(server, host, options.port ?? 0);
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    host,
    port,
    origin: `${options.tls ? "https" : "http"}://${shown}:${port}`,
    requests,
    close: () => closeAll(server, sockets),
  };
}

/** A TCP server that accepts connections and never says anything (no HTTP answer, no TLS handshake). */
export async function startSilentServer(host = "127.0.0.1"): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let count = 0;
  const server: TcpServer = createTcpServer((s) => {
    count++;
    sockets.add(s);
    s.on("error", () => undefined);
    s.on("close", () => sockets.delete(s));
  });
  await listen(server, host, 0);
  return { port: (server.address() as AddressInfo).port, connections: () => count, close: () => closeAll(server, sockets) };
}

function listen(server: TcpServer, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

function closeAll(server: TcpServer, sockets: Set<Socket>): Promise<void> {
  for (const s of sockets) s.destroy();
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Counts client sockets created while `fn` runs (every outbound TCP connection of this process). */
export async function countClientSockets<T>(fn: () => Promise<T>): Promise<{ sockets: number; result: PromiseSettledResult<T> }> {
  let sockets = 0;
  const onSocket = () => {
    sockets++;
  };
  subscribe("net.client.socket", onSocket);
  try {
    const [result] = await Promise.allSettled([fn()]);
    return { sockets, result: result! };
  } finally {
    unsubscribe("net.client.socket", onSocket);
  }
}
