/**
 * Runs once per `vitest run`: builds a migrated template database that every test file clones. Names carry the
 * runner's pid so concurrent runs on one machine never drop each other's databases; leftovers of dead runs are
 * cleaned up.
 */
import pg from "pg";
import type { TestProject } from "vitest/node";
import { migrate } from "../../src/store/migrate.js";
import { adminUrl, databaseUrl } from "./env.js";
import { processAlive as alive } from "./processes.js";

declare module "vitest" {
  export interface ProvidedContext {
    templateDb: string;
  }
}


export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const template = `sy_tpl_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    const stale = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname ~ '^sy_(test|tpl)_[0-9]+'");
    for (const { datname } of stale.rows) {
      const pid = Number(/^sy_(?:test|tpl)_(\d+)/.exec(datname)![1]);
      if (!alive(pid)) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
    }
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${template}`);
  } finally {
    await admin.end();
  }
  await migrate({ connectionString: databaseUrl(template), createDatabase: false });
  project.provide("templateDb", template);
  return async () => {
    const client = new pg.Client({ connectionString: adminUrl() });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {});
    await client.end();
  };
}
