import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GENESIS_HASH, type AuditEntry } from "../../src/domain.js";
import { canonicalAuditRow, chainHash, chainRows, normalizeAuditCost, rowHash } from "../../src/governance/audit-hash.js";
import { appendAudit, listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { withTransaction } from "../../src/store/db.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

function entry(overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    orgId: "acme",
    action: "dispatch",
    actor: "coordinator",
    destination: "role:writer",
    verdict: "allow",
    rule: "builtin:default",
    reason: "no rule matched",
    payloadHash: "ab".repeat(32),
    cost: 1.5,
    taskId: "task-1",
    stepId: "draft",
    envelopeId: "env-1",
    atMs: 1_700_000_000_000,
    ...overrides,
  };
}

describe("canonical audit rows", () => {
  it("has a fixed key order and a pinned hash (changing either breaks every stored chain)", () => {
    const canonical = canonicalAuditRow({ ...entry(), seq: 1 });
    expect(canonical).toBe(
      '{"v":1,"org_id":"acme","seq":1,"action":"dispatch","actor":"coordinator","destination":"role:writer",' +
        '"verdict":"allow","rule":"builtin:default","reason":"no rule matched","payload_hash":"' + "ab".repeat(32) + '",' +
        '"cost":1.5,"task_id":"task-1","step_id":"draft","envelope_id":"env-1","at_ms":1700000000000}',
    );
    // Key order of the input object does not matter.
    const reordered = Object.fromEntries(Object.entries({ ...entry(), seq: 1 }).reverse()) as unknown as AuditEntry & { seq: number };
    expect(canonicalAuditRow(reordered)).toBe(canonical);
    // sha256(GENESIS + "\n" + canonical), cross-checked with `sha256sum`.
    expect(chainHash(GENESIS_HASH, canonical)).toBe("ae366881b2b5d9e4a3a0ba0535c60b000bb9854b5991cc9745e8a9a76a8006fa");
    expect(chainHash(GENESIS_HASH, canonical)).not.toBe(chainHash("1".repeat(64), canonical));
  });

  it("escapes text so no field can impersonate another", () => {
    const sneaky = canonicalAuditRow({ ...entry({ reason: 'x","verdict":"deny' }), seq: 1 });
    expect(JSON.parse(sneaky)).toMatchObject({ reason: 'x","verdict":"deny', verdict: "allow" });
  });

  it("writes costs deterministically: 0.1 + 0.2 and 0.3 hash alike, -0 is 0, NaN is refused", () => {
    expect(normalizeAuditCost(0.1 + 0.2)).toBe(0.3);
    expect(Object.is(normalizeAuditCost(-0), 0)).toBe(true);
    expect(canonicalAuditRow({ ...entry({ cost: 0.1 + 0.2 }), seq: 1 })).toBe(canonicalAuditRow({ ...entry({ cost: 0.3 }), seq: 1 }));
    expect(canonicalAuditRow({ ...entry({ cost: 1e-7 }), seq: 1 })).toContain('"cost":1e-7');
    expect(normalizeAuditCost(Number.MAX_VALUE)).toBe(1.79769313486231e308);
    expect(normalizeAuditCost(normalizeAuditCost(-Number.MAX_VALUE))).toBe(-1.79769313486231e308);
    expect(() => normalizeAuditCost(Number.NaN)).toThrow(/finite/);
    expect(() => normalizeAuditCost(Number.POSITIVE_INFINITY)).toThrow(/finite/);
    expect(() => canonicalAuditRow({ ...entry({ atMs: 1.5 }), seq: 1 })).toThrow(/atMs must be a safe integer/);
  });

  it("chains rows purely from a head", () => {
    const rows = chainRows({ seq: 0, hash: GENESIS_HASH }, [entry(), entry({ stepId: "review", cost: 0.1 + 0.2 })]);
    expect(rows.map((r) => r.seq)).toEqual([1, 2]);
    expect(rows[0]!.prevHash).toBe(GENESIS_HASH);
    expect(rows[1]!.prevHash).toBe(rows[0]!.hash);
    expect(rows[1]!.cost).toBe(0.3);
    for (const row of rows) expect(rowHash(row)).toBe(row.hash);
    const continued = chainRows({ seq: 2, hash: rows[1]!.hash }, [entry({ stepId: "publish" })]);
    expect(continued[0]).toMatchObject({ seq: 3, prevHash: rows[1]!.hash });
    expect(chainRows({ seq: 0, hash: GENESIS_HASH }, [entry(), entry({ stepId: "review", cost: 0.1 + 0.2 })])).toEqual(rows);
    expect(() => chainRows({ seq: 0, hash: GENESIS_HASH }, [entry(), entry({ orgId: "globex" })])).toThrow(/one tenant/);
    expect(() => chainRows({ seq: 3, hash: "nope" }, [entry()])).toThrow(/head is unusable/);
  });
});

describe("canonical audit rows after a Postgres round trip", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("re-hashes to the stored hash for awkward floats and text", async () => {
    const costs = [0.1 + 0.2, 1 / 3, 2 / 3, 1e-7, 123456789.123456789, 5e-324, 1.7976931348623157e308, 0, 0.1 * 3, 9007199254740993];
    const awkward = ["ünïcödé ✓ 🚂", "tab\tnewline\n\"quote\" back\\slash", "lone \uD800 surrogate", "nul \u0000 byte"];
    const entries = [
      ...costs.map((cost, i) => entry({ cost, envelopeId: `cost-${i}` })),
      ...awkward.map((reason, i) => entry({ reason, envelopeId: `text-${i}` })),
    ];
    const appended = await withTransaction(db.pool, (client) => appendAudit(client, entries));
    const stored = await listAudit(db.pool, "acme", { limit: 1000 });
    expect(stored).toHaveLength(entries.length);
    expect(stored).toEqual(appended);
    for (const row of stored) expect(rowHash(row)).toBe(row.hash);
  });

  it("holds for arbitrary doubles even when Postgres prints only 15 digits", async () => {
    await fc.assert(
        fc.asyncProperty(fc.array(fc.double({ noNaN: true, noDefaultInfinity: true }), { minLength: 1, maxLength: 20 }), async (costs) => {
          const orgId = `prop-${Math.random().toString(36).slice(2)}`;
          const appended = await withTransaction(db.pool, (client) => appendAudit(client, costs.map((cost) => entry({ orgId, cost }))));
          const client = await db.pool.connect();
          try {
            await client.query("SET extra_float_digits = 0");
            const stored = await listAudit(client, orgId, { limit: 100 });
            expect(stored.map((r) => r.hash)).toEqual(appended.map((r) => r.hash));
            for (const row of stored) expect(rowHash(row)).toBe(row.hash);
          } finally {
            await client.query("RESET extra_float_digits");
            client.release();
          }
        }),
      { numRuns: 25 },
    );
  });
});
