/**
 * Postgres access: one pool per process, and a transaction helper every repository uses.
 */
import pg from "pg";

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
/** Anything that can run a query: the pool itself or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, "query"> | Pick<pg.PoolClient, "query">;

// int8 columns (audit seq) fit comfortably in a JS number for any realistic chain length.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

export function createPool(options: { connectionString: string; max?: number; applicationName?: string }): Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? "switchyard",
  });
  // An idle client losing its connection must not crash the process; the next checkout reconnects.
  pool.on("error", () => {});
  return pool;
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
