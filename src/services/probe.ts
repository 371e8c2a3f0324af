/**
 * "Does anything answer there?" — a plain TCP connect, because the question is whether a server is listening at
 * all (a refused connection on the default port means: nothing installed or nothing running), not whether it
 * speaks the right protocol; the runtime's own start-up checks report a wrong or unhealthy server.
 */
import { connect } from "node:net";

export interface ProbeOptions {
  /** A connect that neither succeeds nor fails by then counts as "nothing answers". @defaultValue 1 000 */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export function answers(host: string, port: number, options: ProbeOptions = {}): Promise<boolean> {
  const timeoutMs = options.timeoutMs ?? 1_000;
  return new Promise((resolve) => {
    if (options.signal?.aborted) return resolve(false);
    const socket = connect({ host, port });
    const done = (answered: boolean) => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(answered);
    };
    const onAbort = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    options.signal?.addEventListener("abort", onAbort, { once: true });
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/** The host and port of a redis:// or postgres:// URL, defaults filled in. */
export function addressOf(url: string, defaultPort: number): { host: string; port: number } {
  const parsed = new URL(url);
  // URL keeps the brackets of an IPv6 literal; net.connect wants the bare address.
  const host = (parsed.hostname || "127.0.0.1").replace(/^\[(.*)\]$/, "$1");
  return { host, port: parsed.port ? Number(parsed.port) : defaultPort };
}
