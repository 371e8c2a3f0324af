import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuditEntry } from "../../src/domain.js";
import { rowHash } from "../../src/governance/audit-hash.js";
import { createPostgresAuditStore, appendAudit, listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { withTransaction } from "../../src/store/db.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

function entry(orgId: string, n: number): AuditEntry {
  return {
    orgId,
    action: n % 2 ? "dispatch" : "result",
    actor: "coordinator",
    destination: "role:writer",
    verdict: n % 2 ? "allow" : "accepted",
    rule: "builtin:default",
    reason: `entry ${n}`,
    payloadHash: "cd".repeat(32),
    cost: 0.1 * n,
    taskId: "task-1",
    stepId: `step-${n}`,
    envelopeId: `env-${n}`,
    atMs: 1_700_000_000_000 + n,
  };
}

describe("verifyChain", () => {
  let db: TestDatabase;
  let nextOrg = 0;
  /** A fresh tenant with an intact chain of `length` rows (appended in batches of 7 to vary the shape). */
  async function chain(length: number): Promise<string> {
    const orgId = `org-${nextOrg++}`;
    for (let start = 1; start <= length; start += 7) {
      const batch = Array.from({ length: Math.min(7, length - start + 1) }, (_, i) => entry(orgId, start + i));
      await withTransaction(db.pool, (client) => appendAudit(client, batch));
    }
    return orgId;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("passes an intact chain across several pages, and an empty one", async () => {
    const orgId = await chain(25);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, orgId, { pageSize: 4 })).resolves.toEqual({ ok: true, rows: 25, headSeq: 25 });
    await expect(verifyChain(createPostgresAuditStore(), db.pool, orgId)).resolves.toEqual({ ok: true, rows: 25, headSeq: 25 });
    await expect(verifyChain(createPostgresAuditStore(), db.pool, "never-audited")).resolves.toEqual({ ok: true, rows: 0, headSeq: 0 });
  });

  it("names the altered row when a cost or verdict is updated", async () => {
    const orgId = await chain(12);
    await db.pool.query("UPDATE audit_log SET cost = cost + 0.01 WHERE org_id = $1 AND seq = 7", [orgId]);
    const result = await verifyChain(createPostgresAuditStore(), db.pool, orgId, { pageSize: 5 });
    expect(result).toMatchObject({ ok: false, headSeq: 12, firstBroken: { seq: 7, reason: expect.stringMatching(/contents do not match its hash/) } });

    const other = await chain(12);
    await db.pool.query("UPDATE audit_log SET verdict = 'deny' WHERE org_id = $1 AND seq = 3", [other]);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, other)).resolves.toMatchObject({ ok: false, rows: 3, firstBroken: { seq: 3 } });
  });

  it("names the next row when an altered row was re-hashed to cover it up", async () => {
    const orgId = await chain(10);
    const [row] = await listAudit(db.pool, orgId, { afterSeq: 4, limit: 1 });
    const forged = { ...row!, reason: "nothing to see" };
    await db.pool.query("UPDATE audit_log SET reason = $2, hash = $3 WHERE org_id = $1 AND seq = 5", [orgId, forged.reason, rowHash(forged)]);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, orgId)).resolves.toMatchObject({
      ok: false,
      firstBroken: { seq: 6, reason: expect.stringMatching(/prev_hash does not match the hash of row 5/) },
    });
  });

  it("names a tampered prev_hash", async () => {
    const orgId = await chain(8);
    await db.pool.query("UPDATE audit_log SET prev_hash = repeat('f', 64) WHERE org_id = $1 AND seq = 4", [orgId]);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, orgId)).resolves.toMatchObject({ ok: false, firstBroken: { seq: 4, reason: expect.stringMatching(/prev_hash/) } });
  });

  it("names the missing seq when a middle row is deleted (the gap, not the row after it)", async () => {
    const orgId = await chain(10);
    await db.pool.query("DELETE FROM audit_log WHERE org_id = $1 AND seq = 5", [orgId]);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, orgId, { pageSize: 3 })).resolves.toMatchObject({
      ok: false,
      rows: 4,
      firstBroken: { seq: 5, reason: "row 5 is missing (the next row present is 6)" },
    });
    await db.pool.query("DELETE FROM audit_log WHERE org_id = $1 AND seq IN (6, 7)", [orgId]);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, orgId)).resolves.toMatchObject({ firstBroken: { seq: 5, reason: "rows 5..7 are missing (the next row present is 8)" } });
  });

  it("catches a deleted first row, a truncated tail and a tampered head", async () => {
    const first = await chain(5);
    await db.pool.query("DELETE FROM audit_log WHERE org_id = $1 AND seq = 1", [first]);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, first)).resolves.toMatchObject({ ok: false, firstBroken: { seq: 1 } });

    const tail = await chain(9);
    await db.pool.query("DELETE FROM audit_log WHERE org_id = $1 AND seq >= 8", [tail]);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, tail)).resolves.toMatchObject({ ok: false, headSeq: 9, firstBroken: { seq: 8, reason: expect.stringMatching(/tail/) } });

    const badHead = await chain(6);
    await db.pool.query("UPDATE audit_heads SET hash = repeat('a', 64) WHERE org_id = $1", [badHead]);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, badHead)).resolves.toMatchObject({ ok: false, firstBroken: { seq: 6, reason: expect.stringMatching(/head's hash/) } });

    const rolledBackHead = await chain(6);
    await db.pool.query(
      "UPDATE audit_heads SET seq = 4, hash = (SELECT hash FROM audit_log WHERE org_id = $1 AND seq = 4) WHERE org_id = $1",
      [rolledBackHead],
    );
    await expect(verifyChain(createPostgresAuditStore(), db.pool, rolledBackHead)).resolves.toMatchObject({ ok: false, firstBroken: { seq: 5, reason: expect.stringMatching(/beyond the audit head/) } });

    const noHead = await chain(3);
    await db.pool.query("DELETE FROM audit_heads WHERE org_id = $1", [noHead]);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, noHead)).resolves.toMatchObject({ ok: false, firstBroken: { seq: 1 } });
  });

  it("checks one tenant without being disturbed by another's broken chain", async () => {
    const good = await chain(4);
    const bad = await chain(4);
    await db.pool.query("UPDATE audit_log SET actor = 'mallory' WHERE org_id = $1 AND seq = 2", [bad]);
    await expect(verifyChain(createPostgresAuditStore(), db.pool, good)).resolves.toMatchObject({ ok: true });
    await expect(verifyChain(createPostgresAuditStore(), db.pool, bad)).resolves.toMatchObject({ ok: false, firstBroken: { seq: 2 } });
  });

  it("stops when its signal is aborted", async () => {
    const orgId = await chain(3);
    const controller = new AbortController();
    controller.abort();
    await expect(verifyChain(createPostgresAuditStore(), db.pool, orgId, { signal: controller.signal })).rejects.toMatchObject({ code: "CANCELLED" });
  });
});
