import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertSchemaCurrent, loadMigrations, migrate } from "../../src/store/migrate.js";
import { isSwitchyardError } from "../../src/errors.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

describe("migrate", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("is a no-op on a migrated database and reports the current version", async () => {
    const known = (await loadMigrations()).length;
    const result = await migrate({ connectionString: db.url });
    expect(result.applied).toEqual([]);
    expect(result.version).toBe(known);
    await expect(assertSchemaCurrent(db.pool)).resolves.toBeUndefined();
  });

  it("refuses a schema newer than the code knows", async () => {
    await db.pool.query("INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future')");
    try {
      await migrate({ connectionString: db.url });
      expect.unreachable("migrate should refuse");
    } catch (error) {
      expect(isSwitchyardError(error, "SCHEMA_TOO_NEW")).toBe(true);
    }
    await expect(assertSchemaCurrent(db.pool)).rejects.toMatchObject({ code: "SCHEMA_TOO_NEW" });
    await db.pool.query("DELETE FROM schema_migrations WHERE version = 9999");
  });

  it("concurrent migrators on a fresh database apply each migration once", async () => {
    const fresh = await createTestDatabase();
    await fresh.pool.query("DROP TABLE schema_migrations");
    // Rebuild from scratch in a second database name to exercise creation + the advisory lock.
    const url = new URL(fresh.url);
    url.pathname = `/${fresh.name}_new`;
    const results = await Promise.all([1, 2, 3].map(() => migrate({ connectionString: url.toString() })));
    const applied = results.flatMap((r) => r.applied);
    expect(applied).toEqual((await loadMigrations()).map((m) => m.name));
    const { Client } = (await import("pg")).default;
    const admin = new Client({ connectionString: url.toString().replace(`/${fresh.name}_new`, "/postgres") });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${fresh.name}_new WITH (FORCE)`);
    await admin.end();
    await fresh.drop();
  });
});
