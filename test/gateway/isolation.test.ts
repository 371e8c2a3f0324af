/**
 * Tenants never see each other through the API: another tenant's task, approval, workflow, audit rows or foreign
 * agent answers NOT_FOUND (or is simply absent from listings), and row-level security hides other tenants' rows
 * even from a query that forgets its filter. Keys that are missing, wrong or revoked are refused; tenant keys
 * cannot reach the admin service.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { AdminService } from "../../src/gen/switchyard/api/v1/admin_pb.js";
import { ApprovalService } from "../../src/gen/switchyard/api/v1/approvals_pb.js";
import { AuditService } from "../../src/gen/switchyard/api/v1/audit_pb.js";
import { ForeignAgentService } from "../../src/gen/switchyard/api/v1/foreign_pb.js";
import { TaskService } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../../src/gen/switchyard/api/v1/workflows_pb.js";
import { withTenantTransaction } from "../../src/store/tenant-scope.js";
import { listApiKeys, revokeApiKey } from "../../src/tenancy/api-keys.js";
import { waitFor } from "../support/runtime.js";
import { Workers } from "../support/workers.js";
import { codeOf, createGatewayFixture, postJson, type GatewayFixture } from "./fixture.js";

const FLOW = `
name: secret-flow
steps:
  - { id: draft, to: "role:echo" }
  - { id: publish, to: "role:echo", approval: true }
`;

describe("tenant isolation and authentication", () => {
  let fx: GatewayFixture;
  let workers: Workers;
  let keyA: string;
  let keyB: string;
  let taskB: string;
  let approvalB: string;
  beforeAll(async () => {
    fx = await createGatewayFixture();
    keyA = await fx.tenant("tenant-a");
    keyB = await fx.tenant("tenant-b");
    fx.rt.startCoordinator();
    workers = new Workers(fx.rt);
    workers.start("echo", async () => ({ done: true }));
    // Tenant B has a workflow, a task parked on an approval, audit rows and a foreign agent.
    await fx.client(WorkflowService, keyB).submit({ source: FLOW });
    taskB = (await fx.client(TaskService, keyB).start({ workflow: "secret-flow", input: { kind: { case: "stringValue", value: "b-only" } } })).task!.id;
    approvalB = await waitFor(async () => (await fx.client(ApprovalService, keyB).list({})).approvals[0]?.id, { what: "tenant B's approval" });
    await fx.client(ForeignAgentService, keyB).register({ agent: { agentKey: "b-agent", baseUrl: "https://b.example.com", allowHost: "b.example.com" } });
    // Tenant A has something of its own, under the same names where names can collide.
    await fx.client(WorkflowService, keyA).submit({ source: "name: mine\nsteps:\n  - { id: a, to: 'role:echo' }\n" });
  });
  afterAll(async () => {
    await workers.stop();
    await fx.cleanup();
  });

  it("tenant A asking for tenant B's task, approval, workflow or foreign agent gets NOT_FOUND", async () => {
    expect(await codeOf(fx.client(TaskService, keyA).get({ id: taskB }))).toBe(Code.NotFound);
    expect(await codeOf(fx.client(TaskService, keyA).cancel({ id: taskB }))).toBe(Code.NotFound);
    expect(await codeOf(fx.client(TaskService, keyA).explain({ id: taskB }))).toBe(Code.NotFound);
    expect(await codeOf(fx.client(TaskService, keyA).start({ workflow: "secret-flow" }))).toBe(Code.NotFound);
    expect(await codeOf(fx.client(ApprovalService, keyA).decide({ id: approvalB, approve: true }))).toBe(Code.NotFound);
    expect(await codeOf(fx.client(WorkflowService, keyA).get({ ref: "secret-flow" }))).toBe(Code.NotFound);
    expect(await codeOf(fx.client(ForeignAgentService, keyA).get({ agentKey: "b-agent" }))).toBe(Code.NotFound);
    expect(await codeOf(fx.client(ForeignAgentService, keyA).disable({ agentKey: "b-agent" }))).toBe(Code.NotFound);
    expect(await codeOf(fx.client(ForeignAgentService, keyA).update({ agent: { agentKey: "b-agent", enabled: false }, updateMask: { paths: ["enabled"] } }))).toBe(Code.NotFound);
    // Watch too: the stream fails before it yields anything.
    expect(await codeOf((async () => { for await (const _ of fx.client(TaskService, keyA).watch({ id: taskB })) break; })())).toBe(Code.NotFound);
    // B's things are untouched and still B's.
    expect((await fx.client(ApprovalService, keyB).list({})).approvals[0]).toMatchObject({ id: approvalB, status: 1 });
    expect((await fx.client(ForeignAgentService, keyB).get({ agentKey: "b-agent" })).agent?.enabled).toBe(true);
  });

  it("listings and audit rows of tenant A contain nothing of tenant B", async () => {
    expect((await fx.client(TaskService, keyA).list({})).tasks).toEqual([]);
    expect((await fx.client(ApprovalService, keyA).list({})).approvals).toEqual([]);
    expect((await fx.client(WorkflowService, keyA).list({})).workflows.map((w) => w.name)).toEqual(["mine"]);
    expect((await fx.client(ForeignAgentService, keyA).list({})).agents).toEqual([]);
    expect((await fx.client(AuditService, keyA).listRows({ taskId: taskB })).rows).toEqual([]);
    expect((await fx.client(AuditService, keyA).listRows({})).rows).toEqual([]);
    expect(await fx.client(AuditService, keyA).verify({})).toMatchObject({ orgId: "tenant-a", ok: true, rows: 0n });
    expect((await fx.client(AuditService, keyB).listRows({ taskId: taskB })).rows.length).toBeGreaterThan(0);
  });

  it("a Switchyard-Tenant header cannot make a tenant key act for another tenant", async () => {
    expect(await codeOf(fx.client(TaskService, keyA, { tenant: "tenant-b" }).get({ id: taskB }))).toBe(Code.PermissionDenied);
    const raw = await postJson(fx.url, "switchyard.api.v1.TaskService/Get", { id: taskB }, keyA, { "switchyard-tenant": "tenant-b" });
    expect(raw.status).toBe(403);
  });

  it("an unfiltered query under tenant A's scope returns none of tenant B's rows", async () => {
    const tables = ["tasks", "steps", "workflows", "approvals", "audit_log", "audit_heads", "outbox", "foreign_agents", "tenants", "tenant_daily_cost", "processed_envelopes"];
    for (const table of tables) {
      const orgs = await withTenantTransaction(fx.rt.pool, "tenant-a", async (client) => (await client.query(`SELECT DISTINCT org_id FROM ${table}`)).rows.map((r) => r.org_id));
      expect(orgs.filter((o) => o !== "tenant-a"), table).toEqual([]);
    }
    // The rows exist: the filter above is row-level security, not missing data.
    const { rows } = await fx.rt.pool.query("SELECT DISTINCT org_id FROM foreign_agents UNION SELECT DISTINCT org_id FROM approvals");
    expect(rows.map((r) => r.org_id)).toContain("tenant-b");
    // The key table is not readable at all under a tenant scope.
    await expect(withTenantTransaction(fx.rt.pool, "tenant-a", (client) => client.query("SELECT key_hash FROM api_keys"))).rejects.toThrow(/permission denied/);
  });

  it("no key, a wrong key and a revoked key are UNAUTHENTICATED; a tenant key on the admin service is PERMISSION_DENIED", async () => {
    const noKey = await postJson(fx.url, "switchyard.api.v1.TaskService/List", {});
    expect(noKey.status).toBe(401);
    expect(noKey.body).toMatchObject({ code: "unauthenticated" });
    expect(noKey.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await codeOf(fx.client(TaskService, "sy_" + "A".repeat(43)).list({}))).toBe(Code.Unauthenticated);
    expect(await codeOf(fx.client(TaskService, "not-a-key").list({}))).toBe(Code.Unauthenticated);
    const malformedHeader = await postJson(fx.url, "switchyard.api.v1.TaskService/List", {}, undefined, { authorization: `Basic ${keyA}` });
    expect(malformedHeader.status).toBe(401);

    const fresh = await fx.tenant("tenant-c");
    expect((await fx.client(TaskService, fresh).list({})).tasks).toEqual([]);
    const [cKey] = await listApiKeys(fx.rt.stores.apiKeys, fx.rt.pool, { orgId: "tenant-c" });
    await revokeApiKey(fx.rt.stores.apiKeys, fx.rt.pool, cKey!.id);
    const revoked = await fx.client(TaskService, fresh).list({}).catch((e: unknown) => ConnectError.from(e));
    expect(revoked).toBeInstanceOf(ConnectError);
    expect((revoked as ConnectError).code).toBe(Code.Unauthenticated);
    expect((revoked as ConnectError).rawMessage).toContain("revoked");

    expect(await codeOf(fx.client(AdminService, keyA).listTenants({}))).toBe(Code.PermissionDenied);
    const raw = await postJson(fx.url, "switchyard.api.v1.AdminService/CreateTenant", { orgId: "evil", name: "Evil" }, keyA);
    expect(raw.status).toBe(403);
    expect((await fx.rt.pool.query("SELECT count(*)::int AS n FROM tenants WHERE org_id = 'evil'")).rows[0].n).toBe(0);
  });

  it("a used key records when it was last used; the database holds only its hash", async () => {
    const { rows } = await fx.rt.pool.query("SELECT key_hash, key_prefix, last_used_at FROM api_keys WHERE org_id = 'tenant-a'");
    expect(rows[0].last_used_at).toBeInstanceOf(Date);
    expect(rows[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0].key_hash).not.toContain(keyA.slice(3));
    expect(keyA.startsWith(rows[0].key_prefix)).toBe(true);
  });
});
