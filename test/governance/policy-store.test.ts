import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HopFacts } from "../../src/domain.js";
import { BUILTIN_DEFAULT_POLICY } from "../../src/governance/default-policy.js";
import { evaluate } from "../../src/governance/governor.js";
import { getPolicy, PolicyCache, putPolicy } from "../../src/governance/policy-store.js";
import { createPostgresPolicyStore } from "../../src/store/policies/postgres-policy-store.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

const policyStore = createPostgresPolicyStore();

const hop: HopFacts = {
  action: "dispatch",
  orgId: "acme",
  taskId: "t",
  stepId: "s",
  workflow: "w@1",
  destination: { kind: "role", id: "publisher" },
  tenantDailyCost: 0,
  tenantDailyBudget: null,
  egressEnabled: false,
  clearance: 0,
  cost: 1,
  taskCost: 0,
  taskBudget: null,
  approvalHint: false,
  delegationDepth: 0,
};

const denyPublishing = `
rules:
  - id: no-publishing
    action: dispatch
    destination: "role:publish*"
    verdict: deny
    reason: publishing is frozen
`;

describe("policy store", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("versions each tenant's policies 1, 2, 3 and returns the latest", async () => {
    expect(await getPolicy(policyStore, db.pool, "versioned")).toBeNull();
    expect(await putPolicy(policyStore, db.pool, "versioned", denyPublishing)).toEqual({ version: 1 });
    expect(await putPolicy(policyStore, db.pool, "versioned", { default: "deny" })).toEqual({ version: 2 });
    expect(await putPolicy(policyStore, db.pool, "someone-else", {})).toEqual({ version: 1 });
    expect(await putPolicy(policyStore, db.pool, "versioned", '{"default": "requires_approval"}')).toEqual({ version: 3 });
    const latest = await getPolicy(policyStore, db.pool, "versioned");
    expect(latest?.version).toBe(3);
    expect(latest?.compiled.defaultVerdict).toBe("requires_approval");
  });

  it("refuses to store a condition over the CEL cost limits, and bounds one stored before the limits existed", async () => {
    const list = `[${Array.from({ length: 50 }, (_, i) => i).join(",")}]`;
    const when = `hop.action != "dispatch" && ${list}.exists(a, ${list}.exists(b, ${list}.exists(c, ${list}.exists(d, a + b + c + d == -1))))`;
    const document = { default: "allow", rules: [{ id: "loops", when, verdict: "allow", reason: "r" }] };
    await expect(putPolicy(policyStore, db.pool, "costly", document)).rejects.toMatchObject({ code: "INVALID_POLICY", message: expect.stringMatching(/rule 'loops'.*limit maxComprehensionNesting/) });
    expect(await getPolicy(policyStore, db.pool, "costly")).toBeNull();
    // As if stored by an older version: it still loads (a tenant's policy must not stop loading), and denies quickly.
    await db.pool.query("INSERT INTO policies (org_id, version, document) VALUES ('costly', 1, $1::jsonb)", [JSON.stringify(document)]);
    const stored = await getPolicy(policyStore, db.pool, "costly");
    const started = performance.now();
    const verdict = evaluate(stored!.compiled, { ...hop, action: "a2a_egress", destination: { kind: "foreign", id: "x" }, egressEnabled: true });
    expect(verdict).toMatchObject({ verdict: "deny", rule: "loops", reason: expect.stringMatching(/evaluation budget/) });
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("stores the normalized document and compiles it back to the same policy", async () => {
    await putPolicy(policyStore, db.pool, "normalized", denyPublishing);
    const stored = await db.pool.query<{ document: unknown }>("SELECT document FROM policies WHERE org_id = 'normalized'");
    expect(stored.rows[0]!.document).toEqual({
      default: "allow",
      over_budget: "deny",
      clearance: {},
      rules: [{ id: "no-publishing", action: ["dispatch"], destination: ["role:publish*"], verdict: "deny", reason: "publishing is frozen" }],
    });
    const loaded = await getPolicy(policyStore, db.pool, "normalized");
    expect(evaluate(loaded!.compiled, hop)).toEqual({ verdict: "deny", rule: "no-publishing", reason: "publishing is frozen" });
  });

  it("stores nothing when the document does not validate", async () => {
    await expect(putPolicy(policyStore, db.pool, "invalid", { rules: [{ id: "x", verdict: "maybe", reason: "r" }] })).rejects.toMatchObject({
      code: "INVALID_POLICY",
      details: { path: "rules[0].verdict" },
    });
    expect(await getPolicy(policyStore, db.pool, "invalid")).toBeNull();
  });

  it("gives concurrent writers distinct consecutive versions", async () => {
    const versions = await Promise.all(Array.from({ length: 9 }, (_, i) => putPolicy(policyStore, db.pool, "racy", { description: `v${i}` })));
    expect(versions.map((v) => v.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const stored = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM policies WHERE org_id = 'racy'");
    expect(stored.rows[0]!.n).toBe(9);
  });
});

describe("PolicyCache", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("serves the built-in default until a tenant stores a policy, then picks it up after the TTL", async () => {
    let now = 1_000;
    const cache = new PolicyCache({ pool: db.pool, store: policyStore, ttlMs: 2_000, now: () => now });
    expect(await cache.get("cached")).toBe(BUILTIN_DEFAULT_POLICY);

    await putPolicy(policyStore, db.pool, "cached", denyPublishing);
    now += 1_999;
    expect(await cache.get("cached")).toBe(BUILTIN_DEFAULT_POLICY); // still within the TTL
    now += 1;
    const v1 = await cache.get("cached");
    expect(evaluate(v1, hop).rule).toBe("no-publishing");

    // Same version on the next re-read: the compiled policy is kept, not recompiled.
    now += 5_000;
    expect(await cache.get("cached")).toBe(v1);

    await putPolicy(policyStore, db.pool, "cached", { default: "deny" });
    now += 2_000;
    expect(evaluate(await cache.get("cached"), hop)).toMatchObject({ verdict: "deny", rule: "builtin:default" });
  });

  it("re-reads at most once per TTL and shares one read between concurrent callers", async () => {
    let reads = 0;
    const pool = {
      query: ((text: string, values?: unknown[]) => {
        reads++;
        return db.pool.query(text, values);
      }) as typeof db.pool.query,
    };
    let now = 0;
    const cache = new PolicyCache({ pool, store: policyStore, ttlMs: 1_000, now: () => now });
    await Promise.all(Array.from({ length: 10 }, () => cache.get("shared")));
    expect(reads).toBe(1);
    for (let i = 0; i < 10; i++) await cache.get("shared");
    expect(reads).toBe(1);
    now = 1_000;
    await cache.get("shared");
    expect(reads).toBe(2);
    cache.invalidate("shared");
    await cache.get("shared");
    expect(reads).toBe(3);
  });

  it("reaches a running reader within the real TTL", async () => {
    const cache = new PolicyCache({ pool: db.pool, store: policyStore, ttlMs: 50 });
    expect(evaluate(await cache.get("live"), hop).verdict).toBe("allow");
    await putPolicy(policyStore, db.pool, "live", denyPublishing);
    await new Promise((r) => setTimeout(r, 60));
    expect(evaluate(await cache.get("live"), hop).verdict).toBe("deny");
  });
});
