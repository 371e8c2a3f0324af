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
import { startTestServices } from "./test-services.js";

declare module "vitest" {
  export interface ProvidedContext {
    templateDb: string;
  }
}


export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // First: with nothing answering and no URL set, this starts embedded services and points the env at them.
  const stopServices = await startTestServices();
  const template = `sy_tpl_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  try {
    await admin.connect();
    const stale = await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname ~ '^sy_(test|tpl)_[0-9]+'");
    for (const { datname } of stale.rows) {
      const pid = Number(/^sy_(?:test|tpl)_(\d+)/.exec(datname)![1]);
      if (!alive(pid)) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
    }
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${template}`);
    await migrate({ connectionString: databaseUrl(template), createDatabase: false });
  } catch (error) {
    await stopServices();
    throw error;
  } finally {
    await admin.end().catch(() => {});
  }
  project.provide("templateDb", template);
  return async () => {
    try {
      const client = new pg.Client({ connectionString: adminUrl() });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => {});
      await client.end();
    } finally {
      await stopServices();
    }
  };
}
