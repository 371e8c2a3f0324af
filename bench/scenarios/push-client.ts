/**
 * The callback scenario's load generator: keep-alive HTTP/1.1 connections over raw sockets, each sending one
 * pre-serialised request at a time and reading its answer. It stands for a fleet of agents pushing from other
 * machines, so it should take as little of this 2-core box as it can: Node's `http` client spends several times
 * more per request (agent, request and response objects, header parsing) than the server it measures.
 */
import { connect, type Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";

/** One push as bytes on the wire: request line, headers and body. */
export function serialisePush(push: { path: string; token: string; body: string }, host: string): Buffer {
  const body = Buffer.from(push.body);
  const head =
    `POST ${push.path} HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/a2a+json\r\n` +
    `x-a2a-notification-token: ${push.token}\r\ncontent-length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), body]);
}

const HEADER_END = Buffer.from("\r\n\r\n");

/** Reads answers off one socket: status, then the JSON body's `outcome` (or `http_<status>`). */
class AnswerReader {
  private buffered: Buffer = Buffer.alloc(0);
  private waiting: ((outcome: string) => void) | undefined;

  constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
      this.drain();
    });
  }

  next(): Promise<string> {
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.drain();
    });
  }

  private drain(): void {
    if (!this.waiting) return;
    const end = this.buffered.indexOf(HEADER_END);
    if (end < 0) return;
    const head = this.buffered.subarray(0, end).toString("latin1");
    const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    if (this.buffered.length < end + 4 + length) return;
    const status = Number(head.slice(9, 12));
    const body = this.buffered.subarray(end + 4, end + 4 + length).toString("utf8");
    this.buffered = this.buffered.subarray(end + 4 + length);
    const resolve = this.waiting;
    this.waiting = undefined;
    resolve(status === 200 ? ((JSON.parse(body) as { outcome?: string }).outcome ?? "http_200") : `http_${status}`);
  }
}

/**
 * Sends every request over `concurrency` connections to 127.0.0.1:port; counts the answers by outcome and keeps
 * each request's latency (ms, write to answer read).
 */
export async function sendAll(port: number, requests: readonly Buffer[], concurrency: number, signal: AbortSignal): Promise<{ outcomes: Map<string, number>; sent: number; latenciesMs: number[] }> {
  const outcomes = new Map<string, number>();
  const latenciesMs: number[] = [];
  let next = 0;
  const sockets: Socket[] = [];
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        const socket = connect({ host: "127.0.0.1", port, noDelay: true });
        sockets.push(socket);
        await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
        const failed = new Promise<never>((_, reject) =>
          socket.once("close", () => reject(new SwitchyardError(ErrorCode.Unavailable, "the server closed a push connection"))),
        );
        failed.catch(() => {});
        const reader = new AnswerReader(socket);
        while (next < requests.length && !signal.aborted) {
          const answer = reader.next();
          const sentAt = performance.now();
          socket.write(requests[next++]!);
          const outcome = await Promise.race([answer, failed]);
          latenciesMs.push(performance.now() - sentAt);
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        }
      }),
    );
  } finally {
    for (const socket of sockets) socket.destroy();
  }
  return { outcomes, sent: next, latenciesMs };
}
