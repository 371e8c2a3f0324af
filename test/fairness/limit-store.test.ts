/**
 * Stored dispatch limits: set and cleared with an audit row in the same transaction (the tenant's chain, or
 * `_system` for a destination's capacity), picked up by a running process's LiveLimits within 2 s, and bad input
 * from the CLI refused with INVALID_ARGUMENT before anything is written.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { createPostgresAuditStore } from "../../src/store/audit/postgres-audit-store.js";
import { clearLimit, setLimit } from "../../src/fairness/limit-changes.js";
import { listLimits, createPostgresLimitStore } from "../../src/store/limits/postgres-limit-store.js";
import { LiveLimits } from "../../src/fairness/live-limits.js";
import type { DispatchLimit } from "../../src/core/limits.js";
import { ErrorCode } from "../../src/errors.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { redisUrl } from "../support/env.js";
import { runCliCommand } from "../support/processes.js";
import { waitForProgress } from "../support/wait.js";

const limit = (l: Partial<DispatchLimit>): DispatchLimit => ({ orgId: "", destination: "", maxInFlight: null, ratePerSec: null, burst: null, weight: null, ...l });

describe("dispatch limits in Postgres", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("audits a set and a clear in the tenant's chain, a capacity in _system, and the chains verify", async () => {
    const set = await setLimit(createPostgresLimitStore(), db.pool, limit({ orgId: "acme", destination: "role:writer", maxInFlight: 3, ratePerSec: 50 }), { actor: "sre:ana", reason: "noisy" });
    expect(set).toMatchObject({ orgId: "acme", destination: "role:writer", maxInFlight: 3, ratePerSec: 50, updatedBy: "sre:ana" });
    expect(set.audit).toMatchObject({ orgId: "acme", action: "limit", destination: "tenant:acme/role:writer", verdict: "set", rule: "maxInFlight=3 ratePerSec=50", actor: "sre:ana" });
    const capacity = await setLimit(createPostgresLimitStore(), db.pool, limit({ destination: "role:writer", maxInFlight: 20 }), { actor: "sre:ana", reason: "2 × concurrency" });
    expect(capacity.audit).toMatchObject({ orgId: "_system", destination: "role:writer" });
    expect(await clearLimit(createPostgresLimitStore(), db.pool, { orgId: "acme", destination: "role:writer" }, { actor: "sre:ana", reason: "over" })).toBe(true);
    expect(await clearLimit(createPostgresLimitStore(), db.pool, { orgId: "acme", destination: "role:writer" }, { actor: "sre:ana", reason: "again" })).toBe(false);
    expect((await listLimits(db.pool)).map((l) => [l.orgId, l.destination, l.maxInFlight])).toEqual([["", "role:writer", 20]]);
    const { rows } = await db.pool.query<{ verdict: string }>("SELECT verdict FROM audit_log WHERE org_id = 'acme' AND action = 'limit' ORDER BY seq");
    expect(rows.map((r) => r.verdict)).toEqual(["set", "cleared"]);
    for (const chain of ["acme", "_system"]) expect((await verifyChain(createPostgresAuditStore(), db.pool, chain)).ok).toBe(true);
  });

  it("a running process sees a change within 2 s", async () => {
    const live = new LiveLimits({ db: db.pool, store: createPostgresLimitStore(), pollMs: 1_000 });
    await live.refresh();
    live.start();
    try {
      const changedAt = Date.now();
      await setLimit(createPostgresLimitStore(), db.pool, limit({ orgId: "globex", weight: 4 }), { actor: "test", reason: "live" });
      await waitForProgress({ what: "the weight to be live", progress: () => live.limits().weight("globex"), done: (w) => w === 4, intervalMs: 50 });
      expect(Date.now() - changedAt).toBeLessThan(2_000);
    } finally {
      await live.stop();
    }
  });

  it("the CLI refuses a bad number or a meaningless limit with INVALID_ARGUMENT (exit 2), writing nothing", async () => {
    const env = { DATABASE_URL: db.url, REDIS_URL: redisUrl() };
    const before = (await listLimits(db.pool)).length;
    for (const args of [
      ["limits", "set", "--tenant", "acme", "--destination", "role:writer", "--max-in-flight", "three", "--reason", "x", "--json"],
      ["limits", "set", "--tenant", "acme", "--rate", "5", "--reason", "x", "--json"],
    ]) {
      const out = await runCliCommand(args, env);
      expect(out.code).toBe(2);
      expect(JSON.parse(out.stdout.trim() || out.stderr.trim().split("\n").pop()!).error.code).toBe(ErrorCode.InvalidArgument);
    }
    expect(await listLimits(db.pool)).toHaveLength(before);
  });
});
