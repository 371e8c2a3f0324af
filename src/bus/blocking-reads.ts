/**
 * Blocking XREADGROUPs on dedicated connections (duplicates of the command connection), leased from a small pool:
 * a blocked read would otherwise stall every other command on the shared connection. Aborting a read's signal
 * disconnects its connection, so the read returns at once and no socket keeps the process alive; entries Redis had
 * already handed out on it stay pending and are reclaimed later (at-least-once).
 *
 * The pool keeps as many idle connections as were ever leased at once (at least four): a coordinator blocking on its
 * shard inboxes of a cluster holds one per slot it reads, every poll, and re-dialling them each time would cost a
 * cluster handshake per read.
 */
import type { Logger } from "../logger.js";
import type { RedisClient } from "./redis-connection.js";

const MIN_IDLE_CONNECTIONS = 4;

export interface BlockingReads {
  /** XREADGROUP (Buffer replies); `undefined` when the signal aborted it or the pool closed under it. */
  xreadgroup(args: ReadonlyArray<string | number>, blockMs: number, signal: AbortSignal | undefined): Promise<unknown>;
  /** Disconnects every connection, idle or leased. */
  close(): void;
}

export function createBlockingReads(redis: RedisClient, logger: Logger): BlockingReads {
  const idle: RedisClient[] = [];
  const leased = new Set<RedisClient>();
  let peakLeased = 0;
  let closed = false;

  function lease(): RedisClient {
    const connection = idle.pop() ?? redis.duplicate();
    if (connection.listenerCount("error") === 0) {
      connection.on("error", (error: Error) => logger.debug({ err: error }, "blocking bus connection error"));
    }
    leased.add(connection);
    peakLeased = Math.max(peakLeased, leased.size);
    return connection;
  }

  function giveBack(connection: RedisClient, reusable: boolean): void {
    leased.delete(connection);
    if (reusable && !closed && idle.length < Math.max(MIN_IDLE_CONNECTIONS, peakLeased)) idle.push(connection);
    else connection.disconnect();
  }

  return {
    async xreadgroup(args, blockMs, signal) {
      if (blockMs === 0) return redis.callBuffer("XREADGROUP", ...args);
      const connection = lease();
      let aborted = false;
      const onAbort = (): void => {
        aborted = true;
        connection.disconnect();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      try {
        return await connection.callBuffer("XREADGROUP", ...args);
      } catch (error) {
        if (aborted || closed) return undefined;
        throw error;
      } finally {
        signal?.removeEventListener("abort", onAbort);
        giveBack(connection, !aborted);
      }
    },
    close() {
      closed = true;
      for (const connection of [...idle, ...leased]) connection.disconnect();
      idle.length = 0;
      leased.clear();
    },
  };
}
