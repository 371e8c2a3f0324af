import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GENESIS_HASH, type AuditEntry } from "../../src/domain.js";
import { rowHash } from "../../src/governance/audit-hash.js";
import { createPostgresAuditStore, appendAudit, listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { createPool, withTransaction, type Pool } from "../../src/store/db.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { auditEntry as entry } from "./audit-entry.js";

async function head(pool: Pool, orgId: string): Promise<{ seq: number; hash: string } | undefined> {
  const result = await pool.query<{ seq: number; hash: string }>("SELECT seq, hash FROM audit_heads WHERE org_id = $1", [orgId]);
  return result.rows[0] && { seq: Number(result.rows[0].seq), hash: result.rows[0].hash };
}

describe("appendAudit", () => {
  let db: TestDatabase;
  let otherProcess: Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    // A second pool stands in for a second coordinator process: separate connections, separate transactions.
    otherProcess = createPool({ connectionString: db.url, max: 5 });
  });
  afterAll(async () => {
    await otherProcess.end();
    await db.drop();
  });

  it("starts a chain at seq 1 from the genesis hash and moves the head", async () => {
    const rows = await withTransaction(db.pool, (client) => appendAudit(client, [entry("solo", 1), entry("solo", 2)]));
    expect(rows.map((r) => r.seq)).toEqual([1, 2]);
    expect(rows[0]!.prevHash).toBe(GENESIS_HASH);
    expect(rows[1]!.prevHash).toBe(rows[0]!.hash);
    expect(await head(db.pool, "solo")).toEqual({ seq: 2, hash: rows[1]!.hash });
    const more = await withTransaction(db.pool, (client) => appendAudit(client, [entry("solo", 3)]));
    expect(more[0]).toMatchObject({ seq: 3, prevHash: rows[1]!.hash });
    expect(await withTransaction(db.pool, (client) => appendAudit(client, []))).toEqual([]);
  });

  it("leaves no trace when the caller's transaction rolls back", async () => {
    await expect(
      withTransaction(db.pool, async (client) => {
        await appendAudit(client, [entry("rollback", 1)]);
        throw new Error("the hop failed");
      }),
    ).rejects.toThrow("the hop failed");
    expect(await listAudit(db.pool, "rollback")).toEqual([]);
    const rows = await withTransaction(db.pool, (client) => appendAudit(client, [entry("rollback", 2)]));
    expect(rows[0]).toMatchObject({ seq: 1, prevHash: GENESIS_HASH });
  });

  it("chains a multi-tenant batch per tenant, keeps order, and uses one statement per step", async () => {
    const batch = [entry("org-b", 1), entry("org-a", 1), entry("org-b", 2), entry("org-c", 1), entry("org-a", 2), entry("org-b", 3)];
    const statements: string[] = [];
    const rows = await withTransaction(db.pool, (client) =>
      appendAudit(
        {
          query: ((text: string, values?: unknown[]) => {
            statements.push(text);
            return client.query(text, values);
          }) as typeof client.query,
        },
        batch,
      ),
    );
    // head upsert + lock, then ONE statement for all rows and the head update.
    expect(statements).toHaveLength(2);
    expect(statements.filter((s) => /INSERT INTO audit_log/.test(s))).toHaveLength(1);
    expect(rows.map((r) => [r.orgId, r.seq, r.envelopeId])).toEqual([
      ["org-b", 1, "env-org-b-1"],
      ["org-a", 1, "env-org-a-1"],
      ["org-b", 2, "env-org-b-2"],
      ["org-c", 1, "env-org-c-1"],
      ["org-a", 2, "env-org-a-2"],
      ["org-b", 3, "env-org-b-3"],
    ]);
    for (const orgId of ["org-a", "org-b", "org-c"]) {
      const stored = await listAudit(db.pool, orgId);
      expect(stored).toEqual(rows.filter((r) => r.orgId === orgId));
      expect(await head(db.pool, orgId)).toEqual({ seq: stored.length, hash: stored.at(-1)!.hash });
      await expect(verifyChain(createPostgresAuditStore(), db.pool, orgId)).resolves.toMatchObject({ ok: true, rows: stored.length });
    }
  });

  it("never forks under 8 concurrent transactions × 50 rows for one tenant", async () => {
    const writers = Array.from({ length: 8 }, (_, w) =>
      withTransaction(w % 2 === 0 ? db.pool : otherProcess, async (client) => {
        const mine = [];
        // Several appends per transaction, with a pause, so waiting transactions pile up on the head lock.
        for (let part = 0; part < 5; part++) {
          mine.push(...(await appendAudit(client, Array.from({ length: 10 }, (_, i) => entry("busy", w * 100 + part * 10 + i)))));
          if (part === 0) await new Promise((r) => setTimeout(r, 20));
        }
        return mine;
      }),
    );
    const results = await Promise.all(writers);
    const stored = await listAudit(db.pool, "busy", { limit: 1000 });
    expect(stored.map((r) => r.seq)).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    for (let i = 1; i < stored.length; i++) expect(stored[i]!.prevHash).toBe(stored[i - 1]!.hash);
    // The head lock is held to commit, so each transaction's rows are one contiguous run.
    for (const mine of results) {
      expect(mine).toHaveLength(50);
      expect(mine.at(-1)!.seq - mine[0]!.seq).toBe(49);
    }
    await expect(verifyChain(createPostgresAuditStore(), db.pool, "busy")).resolves.toEqual({ ok: true, rows: 400, headSeq: 400 });
  });

  it("does not deadlock when concurrent batches name the same tenants in opposite orders", async () => {
    const runs = Array.from({ length: 6 }, (_, i) =>
      withTransaction(i % 2 ? otherProcess : db.pool, async (client) => {
        const batch = i % 2 ? [entry("x-1", i), entry("x-2", i)] : [entry("x-2", i), entry("x-1", i)];
        const rows = await appendAudit(client, batch);
        await new Promise((r) => setTimeout(r, 10));
        return rows;
      }),
    );
    await Promise.all(runs);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, "x-1")).resolves.toMatchObject({ ok: true, headSeq: 6 });
    await expect(verifyChain(createPostgresAuditStore(), db.pool, "x-2")).resolves.toMatchObject({ ok: true, headSeq: 6 });
  });

  it("refuses entries it cannot chain, before writing anything", async () => {
    await expect(withTransaction(db.pool, (client) => appendAudit(client, [entry("", 1)]))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(
      withTransaction(db.pool, (client) => appendAudit(client, [entry("bad", 1), entry("bad", 2, { cost: Number.NaN })])),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT", details: { path: "cost" } });
    expect(await listAudit(db.pool, "bad")).toEqual([]);
  });
});

describe("listAudit", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await withTransaction(db.pool, (client) => appendAudit(client, Array.from({ length: 12 }, (_, i) => entry("lister", i + 1))));
    await withTransaction(db.pool, (client) => appendAudit(client, [entry("someone-else", 1)]));
  });
  afterAll(async () => {
    await db.drop();
  });

  it("pages by seq, filters by task, and only shows the tenant's own rows", async () => {
    const all = await listAudit(db.pool, "lister");
    expect(all.map((r) => r.seq)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    for (const row of all) expect(rowHash(row)).toBe(row.hash);
    expect((await listAudit(db.pool, "lister", { afterSeq: 5, limit: 3 })).map((r) => r.seq)).toEqual([6, 7, 8]);
    expect((await listAudit(db.pool, "lister", { taskId: "task-0" })).map((r) => r.seq)).toEqual([3, 6, 9, 12]);
    expect((await listAudit(db.pool, "lister", { taskId: "task-0", afterSeq: 6 })).map((r) => r.seq)).toEqual([9, 12]);
    expect(await listAudit(db.pool, "nobody")).toEqual([]);
    expect((await listAudit(db.pool, "someone-else")).map((r) => r.orgId)).toEqual(["someone-else"]);
  });

  it("refuses a bad limit or cursor", async () => {
    await expect(listAudit(db.pool, "lister", { limit: 0 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", details: { path: "limit" } });
    await expect(listAudit(db.pool, "lister", { limit: 10_001 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(listAudit(db.pool, "lister", { afterSeq: -1 })).rejects.toMatchObject({ details: { path: "afterSeq" } });
  });
});
