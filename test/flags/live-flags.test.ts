/**
 * LiveFlags: environment defaults until the table is read, a poller that picks up changes (and tells
 * subscribers), and the last good values kept when the table cannot be read.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultConfig } from "../../src/config/index.js";
import { setFlag } from "../../src/flags/flag-changes.js";
import { createPostgresFlagStore } from "../../src/store/flags/postgres-flag-store.js";
import { LiveFlags } from "../../src/flags/live-flags.js";
import { createPool } from "../../src/store/db.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { within } from "./support.js";

describe("LiveFlags", () => {
  let db: TestDatabase;
  let flags: LiveFlags | undefined;
  beforeEach(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await flags?.stop();
    await db.drop();
  });

  it("starts from the environment's defaults and follows the table while polling", async () => {
    flags = new LiveFlags({ db: db.pool, store: createPostgresFlagStore(), defaults: { ...defaultConfig.flags, busEnabled: true, harnessEnabled: true, harnessScopes: ["role:writer"] } });
    expect(flags.loaded).toBe(false);
    expect(flags.busEnabled()).toBe(true);
    expect(flags.harnessEnabled("role", "writer")).toBe(true);
    await flags.refresh();
    expect(flags.loaded).toBe(true);

    let heard = 0;
    const unsubscribe = flags.subscribe(() => (heard += 1));
    flags.start();
    await setFlag(createPostgresFlagStore(), db.pool, { name: "HARNESS_ENABLED", scopeKind: "role", scope: "writer", enabled: false, actor: "sre", reason: "drain" });
    const tookMs = await within(2_000, () => !flags!.harnessEnabled("role", "writer"), "the poller to see the change");
    expect(tookMs).toBeLessThanOrEqual(2_000);
    expect(heard).toBe(1);
    expect(flags.rows()).toMatchObject([{ name: "HARNESS_ENABLED", scopeKind: "role", scope: "writer", enabled: false, updatedBy: "sre" }]);
    expect(flags.describe()).toContainEqual(expect.objectContaining({ name: "HARNESS_ENABLED", scope: "writer", effective: false, source: "table" }));

    // Unchanged values do not notify.
    await flags.refresh();
    expect(heard).toBe(1);
    unsubscribe();
    await setFlag(createPostgresFlagStore(), db.pool, { name: "BUS_ENABLED", scopeKind: "global", enabled: false, actor: "sre", reason: "maintenance" });
    await within(2_000, () => !flags!.busEnabled(), "the poller to see BUS_ENABLED off");
    expect(heard).toBe(1);
  });

  it("keeps the last values it read when the table cannot be read", async () => {
    const pool = createPool({ connectionString: db.url, max: 1 });
    await setFlag(createPostgresFlagStore(), db.pool, { name: "BUS_ENABLED", scopeKind: "global", enabled: true, actor: "sre", reason: "on" });
    flags = new LiveFlags({ db: pool, store: createPostgresFlagStore(), defaults: defaultConfig.flags, pollMs: 50 });
    await flags.refresh();
    expect(flags.busEnabled()).toBe(true);
    flags.start();
    await pool.end();
    await expect(flags.refresh()).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 200));
    expect(flags.busEnabled()).toBe(true);
  });
});
