/**
 * The scratch databases of test stacks (sdk/test-stack.ts): listed, created and dropped on the server through an
 * admin connection (to the `postgres` database; the role needs CREATEDB). One SQL operation per function.
 */
import pg from "pg";
import type { Queryable } from "./db.js";

/** The server's databases whose name starts with `prefix` (read as a LIKE pattern: a `_` in it matches any character). */
export async function listDatabases(admin: Queryable, prefix: string): Promise<string[]> {
  const { rows } = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1", [`${prefix}%`]);
  return rows.map((r) => r.datname);
}

export async function createDatabase(admin: Queryable, name: string): Promise<void> {
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
}

/** Drops the database even while sessions are connected to it (they are ended); a missing one is no error. */
export async function dropDatabase(admin: Queryable, name: string): Promise<void> {
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
}
