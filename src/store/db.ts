/**
 * Postgres access: one pool per process, and a transaction helper every repository uses.
 */
import pg from "pg";
import type { DependencyHealth } from "../process/dependency-health.js";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool itself or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, "query"> | Pick<pg.PoolClient, "query">;

// int8 columns (audit seq) fit comfortably in a JS number for any realistic chain length.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

export interface CreatePoolOptions {
  connectionString: string;
  max?: number;
  applicationName?: string;
  /** Told when a connection is lost or cannot be made (outage) and when one is made again (recovery). */
  health?: DependencyHealth;
  /**
   * Postgres ends a session idle inside a transaction this long (`idle_in_transaction_session_timeout`): a paused
   * or stuck process (SIGSTOP, a debugger) then cannot hold row locks — a shard lease's fence above all — for good.
   * @defaultValue the server's setting
   */
  idleInTransactionTimeoutMs?: number;
}

/**
 * A pool whose clients can lose their connection at any moment (a restart, a failover, a killed backend) without
 * taking the process down. pg-pool listens for client errors only while a client is idle; a client checked out for
 * a transaction has no listener, and its `error` event would be an uncaught exception. Every client gets a
 * listener for its whole life here: the query in flight fails with the error (callers retry or back off), the
 * pool drops the broken client when it is released, and the next checkout opens a fresh connection.
 */
export function createPool(options: CreatePoolOptions): Pool {
  const health = options.health;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? "switchyard",
    ...(options.idleInTransactionTimeoutMs ? { idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs } : {}),
    Client: trackedClient(health),
  });
  // An idle client losing its connection: the pool drops it; the next checkout reconnects.
  pool.on("error", (error) => health?.unreachable("postgres", error));
  return pool;
}

/** pg.Client with a permanent error listener, reporting connection failures and successes to `health`. */
function trackedClient(health: DependencyHealth | undefined): typeof pg.Client {
  return class TrackedClient extends pg.Client {
    constructor(config?: string | pg.ClientConfig) {
      super(config);
      // Registered before the client's own listener (added on connect), so a socket error is marked before pg
      // rejects the queries in flight with it.
      this.connection.on("error", markFromPostgres);
      this.on("error", (error: Error) => {
        markFromPostgres(error);
        health?.unreachable("postgres", error);
      });
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, client: pg.Client) => void)): void;
    override connect(callback?: ((err: Error) => void) | ((err: null, client: pg.Client) => void)): Promise<pg.Client> | void {
      const askedAtMs = health?.now();
      const report = (error: Error | null | undefined): void => {
        if (error) markFromPostgres(error);
        if (error) health?.unreachable("postgres", error);
        else health?.reachable("postgres", askedAtMs);
      };
      if (!callback) {
        return super.connect().then(
          (client) => {
            report(undefined);
            return client;
          },
          (error: Error) => {
            report(error);
            throw error;
          },
        );
      }
      const done = callback as (err: Error | null, client?: pg.Client) => void;
      super.connect(((error: Error | null, client?: pg.Client) => {
        report(error);
        done(error, client);
      }) as (err: Error) => void);
    }
  };
}

/** Runs `fn` inside BEGIN/COMMIT on one client, rolling back when it throws. */
export async function withTransaction<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}


/**
 * Errors known to come from a pool client's connection (its socket, or its connect attempt). A bare socket error
 * (ECONNRESET, EPIPE, …) says nothing about whose socket it was — a handler's own HTTP call, stdout, a foreign
 * agent — so it counts as an unreachable Postgres only when pg raised it on one of our pools' connections.
 */
const fromPostgres = new WeakSet<object>();

function markFromPostgres(error: unknown): void {
  if (error && typeof error === "object") fromPostgres.add(error);
}

/** Socket errors of an unreachable server (Node, or inside an AggregateError of several addresses). */
const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EPIPE"]);
/** What pg and pg-pool throw when the connection or the pool, not the query, is the problem. */
const UNAVAILABLE_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Cannot use a pool after calling end|Client has encountered a connection error|Client was closed)/;

// Deadlock, serialization failure, and an audit head kept in memory that another writer moved (errors.ts STALE_HEAD).
const RETRYABLE_CODES = new Set(["40P01", "40001", "STALE_HEAD"]);

/**
 * Runs `fn` again (up to 5 times in all) when Postgres aborted it for a deadlock or a serialization failure, or
 * an optimistic audit append found its cached head moved.
 */
export async function retryOnConflict<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= 5 || !code || !RETRYABLE_CODES.has(code)) throw error;
    }
  }
}

/** `withTransaction`, retried on deadlock / serialization failure. */
export function withTransactionRetry<T>(pool: Pool, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  return retryOnConflict(() => withTransaction(pool, fn));
}

/**
 * Whether an error is about reaching the database rather than about what the batch wrote: socket errors raised on
 * a connection of a pool made by `createPool` (a bare socket error from anywhere else is not Postgres's), pg's
 * connection and pool errors, and SQLSTATE classes 08 (connection exception), 53 (insufficient resources: disk
 * full, out of memory, too many connections) and 57P0x (server shutting down, starting up, database dropped),
 * plus 25006 (a read-only server, e.g. a replica after a failover). Re-applying task by task cannot isolate
 * anything there; it would only multiply the failing round trips.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  return isUnavailable(error, false);
}

/** `fromPg`: an enclosing error (an AggregateError of several addresses) was raised by pg. */
function isUnavailable(error: unknown, fromPg: boolean): boolean {
  const e = error as { code?: unknown; message?: unknown; errors?: unknown } | null | undefined;
  if (!e || typeof e !== "object") return false;
  const raisedByPg = fromPg || fromPostgres.has(e);
  const code = typeof e.code === "string" ? e.code : "";
  if (raisedByPg && UNREACHABLE_CODES.has(code)) return true;
  if (code === "25006" || /^(08|53)...$/.test(code) || /^57P0.$/.test(code)) return true;
  if (typeof e.message === "string" && UNAVAILABLE_MESSAGES.test(e.message)) return true;
  return Array.isArray(e.errors) && e.errors.some((inner) => isUnavailable(inner, raisedByPg));
}
