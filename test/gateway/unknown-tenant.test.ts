/**
 * An admin key acts for a tenant only if that tenant exists: `Switchyard-Tenant: ghost` is refused with NOT_FOUND
 * naming the tenant, on every method of every tenant service, and nothing is written for it. The check lives in
 * one place (the auth interceptor's `resolveTenantCall`), which the exhaustive loop below relies on: a method added
 * later is covered without anyone remembering to.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { createApiTransport } from "../../src/cli/remote/transport.js";
import { resolveTenantCall } from "../../src/gateway/auth.js";
import { TENANT_SERVICES } from "../../src/gateway/routes.js";
import { AdminService } from "../../src/gen/switchyard/api/v1/admin_pb.js";
import { ErrorDetailSchema } from "../../src/gen/switchyard/api/v1/errors_pb.js";
import { TaskService } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../../src/gen/switchyard/api/v1/workflows_pb.js";
import type { Principal } from "../../src/tenancy/principal.js";
import { createGatewayFixture, postJson, type GatewayFixture } from "./fixture.js";

const FLOW = "name: ghostly\nsteps:\n  - { id: a, to: 'role:echo' }\n";

/** The error a call failed with; throws if it did not fail. */
async function failure(call: () => Promise<unknown>): Promise<ConnectError> {
  try {
    await call();
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("the call succeeded");
}

/** Rows carrying `org_id = orgId` in any table of the schema. */
async function rowsOf(fx: GatewayFixture, orgId: string): Promise<Record<string, number>> {
  const { rows: tables } = await fx.rt.pool.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.columns WHERE table_schema = 'public' AND column_name = 'org_id' ORDER BY table_name",
  );
  const counts: Record<string, number> = {};
  for (const { table_name } of tables) {
    const { rows } = await fx.rt.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table_name}" WHERE org_id = $1`, [orgId]);
    if (rows[0]!.n > 0) counts[table_name] = rows[0]!.n;
  }
  return counts;
}

describe("an admin key naming a tenant that does not exist", () => {
  let fx: GatewayFixture;
  let adminKey: string;
  beforeAll(async () => {
    fx = await createGatewayFixture();
    adminKey = await fx.adminKey();
    await fx.tenant("acme");
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it("cannot submit a workflow or start a task for it: NOT_FOUND naming the tenant, nothing written", async () => {
    const submit = await failure(() => fx.client(WorkflowService, adminKey, { tenant: "ghost" }).submit({ source: FLOW }));
    expect(submit.code).toBe(Code.NotFound);
    expect(submit.rawMessage).toMatch(/^no tenant ghost \(named in switchyard-tenant\); create it first with AdminService\.CreateTenant or `switchyard tenant create ghost`$/);
    expect(submit.findDetails(ErrorDetailSchema)[0]).toMatchObject({ code: "NOT_FOUND", details: { orgId: "ghost" } });

    const start = await failure(() => fx.client(TaskService, adminKey, { tenant: "ghost" }).start({ workflow: "ghostly", idempotencyKey: "k" }));
    expect(start.code).toBe(Code.NotFound);
    expect(start.rawMessage).toContain("no tenant ghost");

    // The same refusal for curl users, as HTTP 404 with the Connect JSON error.
    const curl = await postJson(fx.url, "switchyard.api.v1.WorkflowService/Submit", { source: FLOW }, adminKey, { "switchyard-tenant": "ghost" });
    expect(curl.status).toBe(404);
    expect(curl.body).toMatchObject({ code: "not_found", message: expect.stringContaining("no tenant ghost") });

    expect(await rowsOf(fx, "ghost")).toEqual({});
  });

  it("is refused on every method of every tenant service, before the method runs", async () => {
    const refused: string[] = [];
    for (const service of TENANT_SERVICES as readonly DescService[]) {
      const client = createClient(service, createApiTransport({ url: fx.url, token: adminKey, tenant: "ghost" })) as unknown as Record<string, (req: object) => unknown>;
      for (const method of service.methods) {
        const call = client[method.localName]!;
        const error = await failure(async () => {
          const result = call({});
          // A server stream (Watch) fails on its first read.
          if (method.methodKind === "server_streaming") for await (const _ of result as AsyncIterable<unknown>) break;
          else await result;
        });
        if (error.code === Code.NotFound && error.rawMessage.startsWith("no tenant ghost")) refused.push(`${service.name}.${method.name}`);
        else refused.push(`${service.name}.${method.name}: ${Code[error.code]} ${error.rawMessage}`);
      }
    }
    const expected = (TENANT_SERVICES as readonly DescService[]).flatMap((s) => s.methods.map((m) => `${s.name}.${m.name}`));
    expect(refused).toEqual(expected);
    expect(expected.length).toBeGreaterThanOrEqual(15);
    expect(await rowsOf(fx, "ghost")).toEqual({});
  });

  it("works once the tenant is created, and an existing tenant was never affected", async () => {
    expect((await fx.client(WorkflowService, adminKey, { tenant: "acme" }).submit({ source: FLOW })).created).toBe(true);
    await fx.client(AdminService, adminKey).createTenant({ orgId: "ghost", name: "Ghost" });
    const submitted = await fx.client(WorkflowService, adminKey, { tenant: "ghost" }).submit({ source: FLOW });
    expect(submitted.created).toBe(true);
    const started = await fx.client(TaskService, adminKey, { tenant: "ghost" }).start({ workflow: "ghostly" });
    expect(started.task?.orgId).toBe("ghost");
  });

  it("resolveTenantCall is where the tenant is decided: the same answers without a gateway", async () => {
    const admin: Principal = { kind: "admin", keyId: "k", keyName: "sre", keyPrefix: "sy_x" };
    await expect(resolveTenantCall(fx.rt.stores.tenants, fx.rt.pool, admin, "nobody")).rejects.toMatchObject({ code: "NOT_FOUND", details: { orgId: "nobody" } });
    await expect(resolveTenantCall(fx.rt.stores.tenants, fx.rt.pool, admin, "acme")).resolves.toEqual({ orgId: "acme", principal: admin });
    await expect(resolveTenantCall(fx.rt.stores.tenants, fx.rt.pool, admin, null)).rejects.toMatchObject({ code: Code.InvalidArgument });
    const tenantKey: Principal = { kind: "tenant", orgId: "acme", keyId: "k2", keyName: "ci", keyPrefix: "sy_y" };
    await expect(resolveTenantCall(fx.rt.stores.tenants, fx.rt.pool, tenantKey, null)).resolves.toEqual({ orgId: "acme", principal: tenantKey });
    await expect(resolveTenantCall(fx.rt.stores.tenants, fx.rt.pool, tenantKey, "ghost")).rejects.toMatchObject({ code: Code.PermissionDenied });
  });
});
