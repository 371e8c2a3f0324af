/**
 * Blocking XREADGROUPs on dedicated connections, leased from a pool: a blocked read would otherwise stall every
 * other command on the shared connection.
 *
 * - On a single Redis the connections are duplicates of the command connection. On a cluster they are plain
 *   connections to the master that serves the read's slot (a cluster refuses one read across slots, so a read is
 *   always one slot): a whole Cluster object per blocked read would cost a slot-map handshake each, and ioredis
 *   cannot reliably cancel a command on a Cluster that is still connecting. A slot that moved (MOVED, a failed
 *   master) is not followed here: the read is answered without blocking through the cluster connection, which
 *   follows redirects and rides out the failover, and the next read finds the new owner.
 * - Aborting a read's `signal` disconnects its connection, so the read returns at once and no socket keeps the
 *   process alive; entries Redis had already handed out on it stay pending and are reclaimed (at-least-once).
 * - Aborting its `wake` signal ends the blocking early but gracefully (CLIENT UNBLOCK, as if the block timed out):
 *   whatever the read had taken is still returned. `readMany` uses it to end its other reads once one has entries.
 * - The pool keeps as many idle connections as were ever leased at once (at least four): a coordinator blocking on
 *   its shard inboxes of a cluster holds one per slot, every poll.
 */
import { Redis } from "ioredis";
import calculateSlot from "cluster-key-slot";
import type { Logger } from "../logger.js";
import { isCluster, mastersOf, type RedisClient } from "./redis-connection.js";
import { hasErrorPrefix } from "./redis-replies.js";

const MIN_IDLE_CONNECTIONS = 4;
/** How often a wake retries CLIENT UNBLOCK while the read has not reached the server yet. */
const UNBLOCK_RETRY_MS = 5;

export interface BlockingReads {
  /**
   * XREADGROUP (Buffer replies) with `args` as after the command name; its first key (after STREAMS) decides the
   * node on a cluster. `undefined` when `signal` aborted it or the pool closed under it.
   */
  xreadgroup(args: ReadonlyArray<string | number>, blockMs: number, signal: AbortSignal | undefined, wake?: AbortSignal): Promise<unknown>;
  /** Disconnects every connection, idle or leased. */
  close(): void;
}

interface Leased {
  connection: Redis;
  /** The server that owns the connection (where CLIENT UNBLOCK must go). */
  server: Redis;
  node: string;
}

export function createBlockingReads(redis: RedisClient, logger: Logger): BlockingReads {
  const idle = new Map<string, Redis[]>();
  const leased = new Set<Redis>();
  const clientIds = new WeakMap<Redis, number>();
  let peakLeased = 0;
  let closed = false;

  /** The node serving `key`'s slot (`""` on a single Redis) and a connection able to send it CLIENT UNBLOCK. */
  async function nodeOf(key: string): Promise<{ node: string; server: Redis } | undefined> {
    if (!isCluster(redis)) return { node: "", server: redis };
    if (redis.slots.length === 0) await mastersOf(redis);
    const node = redis.slots[calculateSlot(key)]?.[0];
    const server = node === undefined ? undefined : redis.nodes("master").find((n) => `${n.options.host}:${n.options.port}` === node);
    return node !== undefined && server ? { node, server } : undefined;
  }

  function open(server: Redis): Redis {
    if (!isCluster(redis)) return redis.duplicate();
    const { host, port } = server.options;
    // No reconnects: a read on a node that went away should fail now and be answered through the cluster
    // connection, not wait for a node that may never come back.
    return new Redis({ ...redis.options.redisOptions, host, port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  }

  function lease(node: string, server: Redis): Leased {
    const connection = idle.get(node)?.pop() ?? open(server);
    if (connection.listenerCount("error") === 0) {
      connection.on("error", (error: Error) => logger.debug({ err: error, node }, "blocking bus connection error"));
    }
    leased.add(connection);
    peakLeased = Math.max(peakLeased, leased.size);
    return { connection, server, node };
  }

  function giveBack({ connection, node }: Leased, reusable: boolean): void {
    leased.delete(connection);
    const idleCount = [...idle.values()].reduce((sum, list) => sum + list.length, 0);
    const usable = connection.status !== "end" && connection.status !== "close";
    if (reusable && usable && !closed && idleCount < Math.max(MIN_IDLE_CONNECTIONS, peakLeased)) {
      const list = idle.get(node) ?? [];
      list.push(connection);
      idle.set(node, list);
    } else {
      connection.disconnect();
    }
  }

  async function clientId(connection: Redis): Promise<number> {
    let id = clientIds.get(connection);
    if (id === undefined) {
      id = Number(await connection.client("ID"));
      clientIds.set(connection, id);
    }
    return id;
  }

  /**
   * CLIENT UNBLOCK until the read is unblocked or settles (it may not have reached the server yet). A user not
   * allowed CLIENT UNBLOCK (ACL) only loses the early wake-up: the read then ends at its block timeout.
   */
  async function unblock(lease: Leased, id: number, settled: () => boolean): Promise<void> {
    while (!settled() && !closed) {
      let done: unknown;
      try {
        done = await lease.server.client("UNBLOCK", id);
      } catch (error) {
        if (isReplyError(error)) {
          logger.warn({ err: error, node: lease.node }, "CLIENT UNBLOCK refused; blocked reads of other slots run to their timeout (allow +client|unblock)");
          return;
        }
        done = 0;
      }
      if (Number(done) === 1) return;
      await new Promise((resolve) => setTimeout(resolve, UNBLOCK_RETRY_MS));
    }
  }

  /** The read without BLOCK through the command connection (which follows redirects on a cluster). */
  function readNow(args: ReadonlyArray<string | number>): Promise<unknown> {
    const at = args.indexOf("BLOCK");
    return redis.callBuffer("XREADGROUP", ...(at >= 0 ? [...args.slice(0, at), ...args.slice(at + 2)] : args));
  }

  return {
    async xreadgroup(args, blockMs, signal, wake) {
      if (blockMs === 0) return readNow(args);
      const firstKey = String(args[args.indexOf("STREAMS") + 1]);
      const target = await nodeOf(firstKey);
      if (!target) return readNow(args);
      const lease_ = lease(target.node, target.server);
      const { connection } = lease_;
      let aborted = false;
      let settled = false;
      const onAbort = (): void => {
        aborted = true;
        connection.disconnect();
      };
      let onWake: (() => void) | undefined;
      signal?.addEventListener("abort", onAbort, { once: true });
      try {
        const id = wake ? await clientId(connection) : undefined;
        if (wake && id !== undefined) {
          onWake = () => void unblock(lease_, id, () => settled);
          if (wake.aborted) return readNow(args);
          wake.addEventListener("abort", onWake, { once: true });
        }
        if (signal?.aborted) return undefined;
        return await connection.callBuffer("XREADGROUP", ...args);
      } catch (error) {
        if (aborted || closed) return undefined;
        // The slot moved or its master is gone: answer through the cluster connection, which finds the new owner.
        if (isCluster(redis) && (hasErrorPrefix(error, "MOVED") || hasErrorPrefix(error, "ASK") || !isReplyError(error))) {
          logger.debug({ err: error, node: target.node }, "blocking read on a cluster node failed; reading through the cluster connection");
          return readNow(args);
        }
        throw error;
      } finally {
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        if (onWake) wake?.removeEventListener("abort", onWake);
        giveBack(lease_, !aborted);
      }
    },
    close() {
      closed = true;
      for (const connection of [...[...idle.values()].flat(), ...leased]) connection.disconnect();
      idle.clear();
      leased.clear();
    },
  };
}

function isReplyError(error: unknown): boolean {
  return error instanceof Error && error.name === "ReplyError";
}
