/**
 * Appending with audit heads kept in memory (governance/audit-heads.ts): one statement instead of two while the
 * cached head is the committed one, and STALE_HEAD (nothing written, the entry dropped) when another writer moved
 * the head meanwhile, including one that moved it while the append waited on its row lock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, isSwitchyardError } from "../../src/errors.js";
import { AuditHeadCache } from "../../src/governance/audit-heads.js";
import { createPostgresAuditStore, appendAudit, listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { withTransaction, type PoolClient } from "../../src/store/db.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { auditEntry as entry } from "./audit-entry.js";
import { waitForProgress } from "../support/wait.js";

/** The client with every statement's text recorded. */
function counted(client: PoolClient, statements: string[]): Pick<PoolClient, "query"> {
  return {
    query: ((text: string, values?: unknown[]) => {
      statements.push(text);
      return client.query(text, values);
    }) as PoolClient["query"],
  };
}

describe("appendAudit with heads in memory", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("locks a head it does not know, then appends in one statement while the cached head holds", async () => {
    const heads = new AuditHeadCache();
    const first = await withTransaction(db.pool, (client) => appendAudit(client, [entry("cached", 1)], { heads }));
    expect(heads.get("cached")).toBeUndefined(); // advanced by the caller after COMMIT, never here
    heads.advance(first);
    const statements: string[] = [];
    const rows = await withTransaction(db.pool, (client) => appendAudit(counted(client, statements), [entry("cached", 2), entry("cached", 3)], { heads }));
    expect(statements).toHaveLength(1);
    expect(statements[0]).not.toMatch(/INSERT INTO audit_heads/);
    expect(rows.map((r) => r.seq)).toEqual([2, 3]);
    expect(rows[0]!.prevHash).toBe(first[0]!.hash);
    // A batch mixing a cached tenant and a new one locks only the new one's head.
    heads.advance(rows);
    statements.length = 0;
    const mixed = await withTransaction(db.pool, (client) => appendAudit(counted(client, statements), [entry("cached", 4), entry("fresh", 1)], { heads }));
    expect(statements).toHaveLength(2);
    expect(mixed.map((r) => [r.orgId, r.seq])).toEqual([["cached", 4], ["fresh", 1]]);
    expect((await verifyChain(createPostgresAuditStore(), db.pool, "cached")).ok).toBe(true);
    expect((await verifyChain(createPostgresAuditStore(), db.pool, "fresh")).ok).toBe(true);
  });

  it("throws STALE_HEAD and writes nothing when another writer appended since the head was cached", async () => {
    let now = 1_000;
    const heads = new AuditHeadCache({ clock: () => now, contendedMs: 5_000 });
    heads.advance(await withTransaction(db.pool, (client) => appendAudit(client, [entry("moved", 1)])));
    // Another writer (the API: a cancel, an approval) appends the locking way.
    await withTransaction(db.pool, (client) => appendAudit(client, [entry("moved", 2)]));
    const error = await withTransaction(db.pool, (client) => appendAudit(client, [entry("moved", 3), entry("other", 1)], { heads })).catch((e: unknown) => e);
    expect(isSwitchyardError(error, ErrorCode.StaleHead)).toBe(true);
    expect(heads.get("moved")).toBeUndefined();
    expect((await listAudit(db.pool, "moved")).map((r) => r.reason)).toEqual(["entry 1", "entry 2"]);
    expect(await listAudit(db.pool, "other")).toEqual([]);
    // Applied again: the head is read under its lock and the chain goes on from the other writer's row.
    const again = await withTransaction(db.pool, (client) => appendAudit(client, [entry("moved", 3)], { heads }));
    expect(again[0]!.seq).toBe(3);
    // Someone else is busy on this chain: it stays out of the cache for a while, then is cached again.
    heads.advance(again);
    expect(heads.get("moved")).toBeUndefined();
    now += 5_000;
    heads.advance(again);
    expect(heads.get("moved")).toEqual({ seq: 3, hash: again[0]!.hash });
    expect((await verifyChain(createPostgresAuditStore(), db.pool, "moved")).ok).toBe(true);
  });

  it("re-checks the head after waiting on another writer's row lock (READ COMMITTED), and matches when that writer rolled back", async () => {
    const heads = new AuditHeadCache({ contendedMs: 0 });
    heads.advance(await withTransaction(db.pool, (client) => appendAudit(client, [entry("waits", 1)])));
    for (const outcome of ["COMMIT", "ROLLBACK"] as const) {
      const writer = await db.pool.connect();
      try {
        await writer.query("BEGIN");
        await appendAudit(writer, [entry("waits", 100)]);
        const appending = withTransaction(db.pool, (client) => appendAudit(client, [entry("waits", 2)], { heads }));
        appending.catch(() => {});
        // The optimistic append is queued behind the writer's row lock before the writer ends.
        await waitForProgress({
          what: "the optimistic append to wait on the writer's head lock",
          progress: async () => (await db.pool.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rowCount ?? 0,
          done: (waiting) => waiting > 0,
        });
        await writer.query(outcome);
        if (outcome === "COMMIT") {
          const error = await appending.catch((e: unknown) => e);
          expect(isSwitchyardError(error, ErrorCode.StaleHead)).toBe(true);
          heads.advance(await withTransaction(db.pool, (client) => appendAudit(client, [entry("waits", 2)], { heads })));
        } else {
          heads.advance(await appending);
        }
      } finally {
        writer.release();
      }
    }
    const rows = await listAudit(db.pool, "waits");
    expect(rows.map((r) => r.reason)).toEqual(["entry 1", "entry 100", "entry 2", "entry 2"]);
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    expect((await verifyChain(createPostgresAuditStore(), db.pool, "waits")).ok).toBe(true);
  });
});
