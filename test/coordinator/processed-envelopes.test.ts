/**
 * Applied envelope ids are kept for SWITCHYARD_DEDUPE_RETENTION_MS and trimmed by age: older ids go, younger ones
 * stay (a redelivery within the window is still dropped). The window cannot be set below an hour.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { trimProcessedEnvelopes } from "../../src/store/engine/postgres-envelope-store.js";
import { ErrorCode } from "../../src/errors.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe("processed envelope retention", () => {
  it("deletes ids older than the window and keeps the rest", async () => {
    await db.pool.query(
      `INSERT INTO processed_envelopes (envelope_id, org_id, processed_at) VALUES
         ('old-1', 'o', now() - interval '3 hours'), ('old-2', 'o', now() - interval '2 hours 1 minute'),
         ('young-1', 'o', now() - interval '1 hour 59 minutes'), ('young-2', 'o', now())`,
    );
    expect(await trimProcessedEnvelopes(db.pool, 2 * 3_600_000)).toBe(2);
    const { rows } = await db.pool.query<{ envelope_id: string }>("SELECT envelope_id FROM processed_envelopes ORDER BY envelope_id");
    expect(rows.map((r) => r.envelope_id)).toEqual(["young-1", "young-2"]);
    expect(await trimProcessedEnvelopes(db.pool, 2 * 3_600_000)).toBe(0);
  });

  it("is read from SWITCHYARD_DEDUPE_RETENTION_MS, 7 days by default, never below an hour", () => {
    expect(loadConfig({}).coordinator.dedupeRetentionMs).toBe(7 * 24 * 3_600_000);
    expect(loadConfig({ SWITCHYARD_DEDUPE_RETENTION_MS: "7200000" }).coordinator.dedupeRetentionMs).toBe(7_200_000);
    expect(() => loadConfig({ SWITCHYARD_DEDUPE_RETENTION_MS: "60000" })).toThrow(expect.objectContaining({ code: ErrorCode.Config, message: expect.stringContaining("SWITCHYARD_DEDUPE_RETENTION_MS") }));
  });
});
