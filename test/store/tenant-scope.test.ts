/**
 * Row-level security: a tenant-scoped transaction sees and writes only its own tenant's rows, even when a query
 * forgets to filter, and the whole engine path (task start: steps, audit chain, outbox) works under it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { tenantScoped, withTenantTransaction } from "../../src/store/tenant-scope.js";
import { TaskService } from "../../src/tasks/tasks.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";

describe("tenant scope (row-level security)", () => {
  let rt: TestRuntime;
  let acmeTask: string;
  let globexTask: string;
  beforeAll(async () => {
    rt = await createTestRuntime();
    for (const org of ["acme", "globex"]) {
      await submitWorkflow(rt.pool, org, parseWorkflowDefinition(`name: one\nsteps:\n  - { id: a, to: "role:echo" }\n`));
    }
    const scopedTasks = new TaskService({ pool: rt.pool, engine: rt.engine, approvals: rt.stores.approvals, tasks: rt.stores.tasks, replies: rt.stores.replies, maxPayloadBytes: 1 << 20, transact: tenantScoped(rt.pool) });
    acmeTask = (await scopedTasks.start({ orgId: "acme", workflow: "one", input: { secret: "acme-only" } })).taskId;
    globexTask = (await scopedTasks.start({ orgId: "globex", workflow: "one" })).taskId;
  });
  afterAll(async () => {
    await rt.cleanup();
  });

  it("an unfiltered query under one tenant's scope returns none of another's rows", async () => {
    for (const table of ["tasks", "steps", "workflows", "audit_log", "audit_heads", "outbox"]) {
      const orgs = await withTenantTransaction(rt.pool, "acme", async (client) => {
        const { rows } = await client.query(`SELECT DISTINCT org_id FROM ${table}`);
        return rows.map((r) => r.org_id);
      });
      expect(orgs.every((o) => o === "acme"), `${table}: ${orgs.join(",")}`).toBe(true);
    }
    // Unscoped (the owner), both tenants are there: the filter above is RLS, not missing data.
    const { rows } = await rt.pool.query("SELECT DISTINCT org_id FROM tasks ORDER BY org_id");
    expect(rows.map((r) => r.org_id)).toEqual(["acme", "globex"]);
  });

  it("the engine ran under the scope: steps, audit and outbox rows were written for the tenant", async () => {
    const { rows } = await rt.pool.query("SELECT org_id, action FROM audit_log WHERE task_id = $1", [acmeTask]);
    expect(rows).toEqual([{ org_id: "acme", action: "dispatch" }]);
  });

  it("a tenant cannot read another tenant's task through the service, nor write rows for it", async () => {
    const scopedTasks = new TaskService({ pool: rt.pool, engine: rt.engine, approvals: rt.stores.approvals, tasks: rt.stores.tasks, replies: rt.stores.replies, maxPayloadBytes: 1 << 20, transact: tenantScoped(rt.pool) });
    await expect(scopedTasks.get("acme", globexTask)).rejects.toMatchObject({ code: "NOT_FOUND" });
    expect((await scopedTasks.get("acme", acmeTask)).id).toBe(acmeTask);
    await expect(
      withTenantTransaction(rt.pool, "acme", (client) =>
        client.query("UPDATE tasks SET status = 'cancelled' WHERE id = $1 RETURNING id", [globexTask]).then((r) => r.rowCount),
      ),
    ).resolves.toBe(0);
    await expect(
      withTenantTransaction(rt.pool, "acme", (client) =>
        client.query("INSERT INTO policies (org_id, version, document) VALUES ('globex', 99, '{}')"),
      ),
    ).rejects.toThrow(/row-level security/);
  });
});
