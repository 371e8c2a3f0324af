/**
 * Stored flag values and their audit rows: who and why, in the tenant's chain for tenant scopes and in the
 * `_system` chain otherwise, written in the same transaction as the flag; and the `flags set|list` commands.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { createPostgresAuditStore, listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { setFlag, SYSTEM_CHAIN } from "../../src/flags/flag-changes.js";
import { listFlags, createPostgresFlagStore } from "../../src/store/flags/postgres-flag-store.js";
import { withTransaction } from "../../src/store/db.js";
import { createCliEnvironment, type CliEnvironment } from "../cli/helpers.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

async function invalid(promise: Promise<unknown>): Promise<SwitchyardError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    expect((error as SwitchyardError).code).toBe(ErrorCode.InvalidArgument);
    return error as SwitchyardError;
  }
  throw new Error("expected INVALID_ARGUMENT");
}

describe("flag store", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("stores a value and audits it in the tenant's chain (tenant scope) or the _system chain (others)", async () => {
    const tenantRow = await setFlag(createPostgresFlagStore(), db.pool, { name: "COORDINATOR_ENABLED", scopeKind: "tenant", scope: "acme", enabled: false, actor: "sre:ana", reason: "incident 42" });
    expect(tenantRow).toMatchObject({ name: "COORDINATOR_ENABLED", scopeKind: "tenant", scope: "acme", enabled: false, updatedBy: "sre:ana", reason: "incident 42" });
    expect(tenantRow.audit).toMatchObject({ orgId: "acme", seq: 1, action: "flag", actor: "sre:ana", destination: "tenant:acme", verdict: "off", rule: "COORDINATOR_ENABLED", reason: "incident 42" });

    const roleRow = await setFlag(createPostgresFlagStore(), db.pool, { name: "HARNESS_ENABLED", scopeKind: "role", scope: "writer", enabled: true, actor: "sre:bo", reason: "go-live step 1" });
    const globalRow = await setFlag(createPostgresFlagStore(), db.pool, { name: "BUS_ENABLED", scopeKind: "global", enabled: true, actor: "sre:bo", reason: "go-live step 3" });
    expect(roleRow.audit).toMatchObject({ orgId: SYSTEM_CHAIN, seq: 1, destination: "role:writer", verdict: "on", rule: "HARNESS_ENABLED" });
    expect(globalRow.audit).toMatchObject({ orgId: SYSTEM_CHAIN, seq: 2, destination: "global", verdict: "on", rule: "BUS_ENABLED", reason: "go-live step 3" });

    // A second change of the same scope overwrites the value and is audited again.
    const again = await setFlag(createPostgresFlagStore(), db.pool, { name: "COORDINATOR_ENABLED", scopeKind: "tenant", scope: "acme", enabled: true, actor: "sre:ana", reason: "incident 42 resolved" });
    expect(again).toMatchObject({ enabled: true, reason: "incident 42 resolved" });
    expect(again.audit.seq).toBe(2);

    expect((await listFlags(db.pool)).map((r) => [r.name, r.scopeKind, r.scope, r.enabled])).toEqual([
      ["BUS_ENABLED", "global", "", true],
      ["COORDINATOR_ENABLED", "tenant", "acme", true],
      ["HARNESS_ENABLED", "role", "writer", true],
    ]);
    expect((await listAudit(db.pool, "acme")).map((a) => [a.action, a.verdict, a.reason])).toEqual([
      ["flag", "off", "incident 42"],
      ["flag", "on", "incident 42 resolved"],
    ]);
    expect(await verifyChain(createPostgresAuditStore(), db.pool, "acme")).toMatchObject({ ok: true, rows: 2 });
    expect(await verifyChain(createPostgresAuditStore(), db.pool, SYSTEM_CHAIN)).toMatchObject({ ok: true, rows: 2 });
  });

  it("writes the flag and its audit row in one transaction: a rollback leaves neither", async () => {
    await expect(
      withTransaction(db.pool, async (client) => {
        await setFlag(createPostgresFlagStore(), client, { name: "BUS_ROUTED", scopeKind: "team", scope: "ops", enabled: true, actor: "sre", reason: "try" });
        throw new Error("abort the transaction");
      }),
    ).rejects.toThrow("abort the transaction");
    expect((await listFlags(db.pool)).some((r) => r.name === "BUS_ROUTED")).toBe(false);
    expect((await listAudit(db.pool, SYSTEM_CHAIN, { limit: 100 })).some((a) => a.rule === "BUS_ROUTED")).toBe(false);
  });

  it("refuses unknown flags, scopes a flag does not have, bad names and a missing actor or reason", async () => {
    const base = { enabled: true, actor: "sre", reason: "why" };
    expect((await invalid(setFlag(createPostgresFlagStore(), db.pool, { ...base, name: "BUS_ENABLE", scopeKind: "global" }))).message).toMatch(/unknown flag "BUS_ENABLE"; flags are BUS_ENABLED, /);
    expect((await invalid(setFlag(createPostgresFlagStore(), db.pool, { ...base, name: "BUS_ENABLED", scopeKind: "tenant", scope: "acme" }))).message).toMatch(/BUS_ENABLED has no tenant scope; set it global/);
    expect((await invalid(setFlag(createPostgresFlagStore(), db.pool, { ...base, name: "BUS_ROUTED", scopeKind: "global" }))).message).toMatch(/BUS_ROUTED has no global scope; set it --role or --team/);
    expect((await invalid(setFlag(createPostgresFlagStore(), db.pool, { ...base, name: "HARNESS_ENABLED", scopeKind: "role", scope: "no spaces" }))).details).toEqual({ path: "scope" });
    expect((await invalid(setFlag(createPostgresFlagStore(), db.pool, { ...base, name: "HARNESS_ENABLED", scopeKind: "global", scope: "x" }))).details).toEqual({ path: "scope" });
    expect((await invalid(setFlag(createPostgresFlagStore(), db.pool, { ...base, name: "HARNESS_ENABLED", scopeKind: "global", reason: " " }))).details).toEqual({ path: "reason" });
    expect((await invalid(setFlag(createPostgresFlagStore(), db.pool, { ...base, name: "HARNESS_ENABLED", scopeKind: "global", actor: "" }))).details).toEqual({ path: "actor" });
  });
});

describe("flags set|list (CLI)", () => {
  let cli: CliEnvironment;
  beforeAll(async () => {
    cli = await createCliEnvironment();
  });
  afterAll(async () => {
    await cli?.cleanup();
  });

  it("sets a scoped value with who and why, and lists it over the environment's defaults", async () => {
    const set = await cli.run(["flags", "set", "HARNESS_ENABLED", "off", "--role", "writer", "--reason", "draining writer", "--actor", "sre:ana"]);
    expect(set.stderr).toMatch(/counts only while HARNESS_ENABLED is on globally/);
    expect(set.code).toBe(0);
    expect(set.last).toBe("HARNESS_ENABLED role:writer is now off (by sre:ana: draining writer); audit seq 1 in chain _system");

    const json = await cli.run(["flags", "set", "A2A_EGRESS_ENABLED", "on", "--tenant", "acme", "--reason", "pilot", "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.last)).toMatchObject({ name: "A2A_EGRESS_ENABLED", scopeKind: "tenant", scope: "acme", enabled: true, updatedBy: "cli", audit: { orgId: "acme", seq: 1 } });

    const list = await cli.run(["flags", "list", "--json"]);
    const views = JSON.parse(list.last) as Array<Record<string, unknown>>;
    // The test environment switches harnesses on for every queue (`*`); the stored row wins for role:writer.
    expect(views).toContainEqual(expect.objectContaining({ name: "HARNESS_ENABLED", scopeKind: "role", scope: "writer", enabled: false, effective: false, source: "table", reason: "draining writer" }));
    expect(views).toContainEqual(expect.objectContaining({ name: "HARNESS_ENABLED", scopeKind: "role", scope: "*", enabled: true, effective: true, source: "env" }));
    // On for acme, but egress stays off globally (the default), so not in force.
    expect(views).toContainEqual(expect.objectContaining({ name: "A2A_EGRESS_ENABLED", scopeKind: "tenant", scope: "acme", enabled: true, effective: false, source: "table" }));

    const table = await cli.run(["flags", "list"]);
    expect(table.lines[0]).toMatch(/^FLAG\s+SCOPE\s+VALUE\s+IN FORCE\s+SOURCE\s+UPDATED\s+BY\s+REASON$/);
    expect(table.stdout).toMatch(/HARNESS_ENABLED\s+role:writer\s+off\s+off\s+table\s+\S+ \S+\s+sre:ana\s+draining writer/);

    const audit = await cli.run(["audit", "verify", "--tenant", "_system"]);
    expect(audit.code).toBe(0);
  });

  it("refuses bad input with exit 2", async () => {
    expect((await cli.run(["flags", "set", "BUS_ENABLED", "maybe", "--reason", "x"])).stderr).toMatch(/INVALID_ARGUMENT: the value must be on or off, got "maybe"/);
    const two = await cli.run(["flags", "set", "HARNESS_ENABLED", "on", "--role", "a", "--team", "b", "--reason", "x"]);
    expect(two.code).toBe(2);
    expect(two.stderr).toMatch(/pass at most one of --tenant, --role, --team/);
    const noReason = await cli.run(["flags", "set", "BUS_ENABLED", "on"]);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toMatch(/--reason/);
    const wrongScope = await cli.run(["flags", "set", "BUS_ENABLED", "on", "--tenant", "acme", "--reason", "x"]);
    expect(wrongScope.code).toBe(2);
    expect(wrongScope.stderr).toMatch(/BUS_ENABLED has no tenant scope/);
  });
});
