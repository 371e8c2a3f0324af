/**
 * The gateway's TCP side: listening (a port in use is an operator's mistake, said as one), the URL clients reach it
 * at, and the graceful stop: no new connections, idle keep-alive connections closed as their last call finishes,
 * and whatever still runs after the grace period cut.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Logger } from "../logger.js";

/** Listens on `host:port`; resolves with the port bound (0 picks one) and the URL to show. */
export async function listen(server: Server, host: string, port: number): Promise<{ port: number; url: string }> {
  await new Promise<void>((resolve, reject) => {
    const failed = (error: Error) => reject(listenFailure(error, host, port));
    server.once("error", failed);
    server.listen(port, host, () => {
      server.off("error", failed);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  // Loopback when listening on every interface: a URL to reach it at, not the wildcard.
  const shownHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  return { port: bound, url: `http://${shownHost}:${bound}` };
}

/**
 * Stops accepting connections, closes each keep-alive connection as soon as it is idle, and after `graceMs` cuts
 * the rest. `onDrained` runs when the calls have finished or the grace is over, before the last sockets are gone.
 */
export async function closeGracefully(server: Server, options: { graceMs: number; logger: Logger; onDrained(): void }): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // Keep-alive connections become idle as their last call finishes; close each as soon as it does.
  server.closeIdleConnections();
  const sweeper = setInterval(() => server.closeIdleConnections(), 25);
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      options.logger.warn({ graceMs: options.graceMs }, "gateway requests still running after the grace period; closing their connections");
      server.closeAllConnections();
      resolve();
    }, options.graceMs);
  });
  await Promise.race([closed, grace]);
  options.onDrained();
  clearTimeout(timer);
  clearInterval(sweeper);
  await closed;
}

/**
 * A port in use (or an interface the host lacks) is an operator's mistake, not a crash: say which address, and what
 * to do. `details.cause` keeps the socket error code for callers that retry on another port (the demo).
 */
function listenFailure(error: Error, host: string, port: number): Error {
  const code = (error as NodeJS.ErrnoException).code;
  const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  if (code === "EADDRINUSE") {
    return new SwitchyardError(ErrorCode.Unavailable, `the gateway cannot listen on ${where}: the port is in use; choose another with --port or SWITCHYARD_GATEWAY_PORT`, {
      cause: error,
      details: { cause: code, host, port },
    });
  }
  if (code === "EADDRNOTAVAIL" || code === "EACCES") {
    return new SwitchyardError(ErrorCode.Unavailable, `the gateway cannot listen on ${where} (${code}); check --host / SWITCHYARD_GATEWAY_HOST and --port / SWITCHYARD_GATEWAY_PORT`, {
      cause: error,
      details: { cause: code, host, port },
    });
  }
  return error;
}
