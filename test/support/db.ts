/**
 * A fresh database per test file, cloned from the migrated template built in global-setup.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { createPool, type Pool } from "../../src/store/db.js";
import { inject } from "vitest";
import { adminUrl, databaseUrl } from "./env.js";

export interface TestDatabase {
  name: string;
  url: string;
  pool: Pool;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const template = inject("templateDb");
  // The runner's pid in the name lets a later run drop this database if the run dies before cleaning up.
  const name = `sy_test_${process.ppid}_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    // CREATE DATABASE ... TEMPLATE fails while another session is connected to the template; retry briefly.
    for (let i = 0; ; i++) {
      try {
        await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        break;
      } catch (error) {
        if (i >= 50 || (error as { code?: string }).code !== "55006") throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    await admin.end();
  }
  const url = databaseUrl(name);
  const pool = createPool({ connectionString: url, max: 10 });
  return {
    name,
    url,
    pool,
    async drop() {
      await pool.end().catch(() => {});
      const client = new pg.Client({ connectionString: adminUrl() });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await client.end();
    },
  };
}
