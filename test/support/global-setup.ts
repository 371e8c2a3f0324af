/**
 * Runs once per `vitest run`: builds a migrated template database that every test file clones.
 */
import pg from "pg";
import { migrate } from "../../src/store/migrate.js";
import { adminUrl, databaseUrl, TEMPLATE_DB } from "./env.js";

export default async function setup(): Promise<() => Promise<void>> {
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    // Leftovers from an interrupted earlier run.
    const stale = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'sy_test_%'");
    for (const row of stale.rows) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(row.datname)} WITH (FORCE)`);
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  await migrate({ connectionString: databaseUrl(TEMPLATE_DB), createDatabase: false });
  return async () => {
    const client = new pg.Client({ connectionString: adminUrl() });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`).catch(() => {});
    await client.end();
  };
}
