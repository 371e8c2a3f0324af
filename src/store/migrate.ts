/**
 * Applies `migrations/NNNN_name.sql` in order, each in its own transaction, under a session advisory lock so
 * concurrent starters serialise. Refuses a database whose schema is newer than the migrations this code ships.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { assetPath } from "../package-paths.js";

export const defaultMigrationsDir = assetPath("migrations/");

// Arbitrary but fixed: every Switchyard migrator contends on the same key.
const MIGRATION_LOCK_KEY = 7_146_920_331;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir: string = defaultMigrationsDir): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    migrations.push({ version: Number(file.slice(0, 4)), name: file.replace(/\.sql$/, ""), sql: await readFile(path.join(dir, file), "utf8") });
  }
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new SwitchyardError(ErrorCode.Internal, `migration numbering has a gap or duplicate at ${m.name}`);
  });
  return migrations;
}

/**
 * Creates the database named in `connectionString` when it does not exist yet. Only then is the server's
 * `postgres` database touched, so managed services that forbid it work as long as the database exists.
 */
export async function ensureDatabase(connectionString: string): Promise<void> {
  const target = new URL(connectionString);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ""));
  if (!name) throw new SwitchyardError(ErrorCode.Config, "DATABASE_URL names no database");
  const probe = new pg.Client({ connectionString });
  try {
    await probe.connect();
    return;
  } catch (error) {
    if ((error as { code?: string }).code !== "3D000") throw error; // anything but "database does not exist"
  } finally {
    await probe.end().catch(() => {});
  }
  const admin = new URL(connectionString);
  admin.pathname = "/postgres";
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`).catch((error: { code?: string }) => {
      // Created concurrently by another starter: 42P04 duplicate_database, or 23505 when the catalog insert races.
      if (error.code !== "42P04" && error.code !== "23505") throw error;
    });
  } finally {
    await client.end();
  }
}

export interface MigrateResult {
  applied: string[];
  version: number;
}

export async function migrate(options: { connectionString: string; dir?: string; createDatabase?: boolean }): Promise<MigrateResult> {
  if (options.createDatabase !== false) await ensureDatabase(options.connectionString);
  const migrations = await loadMigrations(options.dir);
  const known = migrations.length;
  const client = new pg.Client({ connectionString: options.connectionString });
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ version: number }>("SELECT COALESCE(max(version), 0)::int AS version FROM schema_migrations");
    const current = rows[0]?.version ?? 0;
    if (current > known) {
      throw new SwitchyardError(
        ErrorCode.SchemaTooNew,
        `database schema is at version ${current} but this build knows only ${known}; upgrade Switchyard before running it here`,
        { details: { current, known } },
      );
    }
    const applied: string[] = [];
    for (const m of migrations.filter((m) => m.version > current)) {
      await client.query("BEGIN");
      try {
        await client.query(m.sql);
        await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw new SwitchyardError(ErrorCode.Internal, `migration ${m.name} failed: ${(error as Error).message}`, { cause: error });
      }
      applied.push(m.name);
    }
    return { applied, version: known };
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.end();
  }
}

/** Throws SCHEMA_TOO_NEW or FAILED_PRECONDITION when the database is not at exactly this build's version. */
export async function assertSchemaCurrent(pool: Pick<pg.Pool, "query">, dir?: string): Promise<void> {
  const known = (await loadMigrations(dir)).length;
  const { rows } = await pool
    .query<{ version: number }>("SELECT COALESCE(max(version), 0)::int AS version FROM schema_migrations")
    .catch((error: { code?: string; message?: string }) => {
      // Only a database never migrated (no schema_migrations table) counts as version 0.
      if (error.code === "42P01") return { rows: [{ version: 0 }] };
      throw new SwitchyardError(ErrorCode.Unavailable, `cannot read the schema version: ${error.message ?? String(error)}`, { cause: error });
    });
  const current = rows[0]?.version ?? 0;
  if (current > known) throw new SwitchyardError(ErrorCode.SchemaTooNew, `database schema ${current} is newer than this build (${known})`);
  if (current < known) {
    throw new SwitchyardError(ErrorCode.FailedPrecondition, `database schema ${current} is behind this build (${known}); run \`switchyard migrate\``);
  }
}
