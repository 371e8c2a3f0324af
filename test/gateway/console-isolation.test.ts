/**
 * A console session is exactly its API key: tenant A signed in to the console reaches none of tenant B's tasks,
 * approvals, workflows, audit rows or agents, through any method of any tenant service; a Switchyard-Tenant header
 * cannot widen it; admin services refuse a tenant's session.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ApprovalService } from "../../src/gen/switchyard/api/v1/approvals_pb.js";
import { ForeignAgentService } from "../../src/gen/switchyard/api/v1/foreign_pb.js";
import { TaskService } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../../src/gen/switchyard/api/v1/workflows_pb.js";
import { ADMIN_SERVICES, TENANT_SERVICES } from "../../src/gateway/routes.js";
import { waitFor } from "../support/runtime.js";
import { Workers } from "../support/workers.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";
import { sessionCall, signIn, type SignedIn } from "./console-fixture.js";

const FLOW = `
name: secret-flow
steps:
  - { id: draft, to: "role:echo" }
  - { id: publish, to: "role:echo", approval: true }
`;

describe("console sessions keep tenants apart", () => {
  let fx: GatewayFixture;
  let workers: Workers;
  let keyB: string;
  let sessionA: SignedIn;
  let taskB: string;
  let approvalB: string;
  beforeAll(async () => {
    fx = await createGatewayFixture();
    const keyA = await fx.tenant("tenant-a");
    keyB = await fx.tenant("tenant-b");
    fx.rt.startCoordinator();
    workers = new Workers(fx.rt);
    workers.start("echo", async () => ({ secret: "b-output" }));
    await fx.client(WorkflowService, keyB).submit({ source: FLOW });
    taskB = (await fx.client(TaskService, keyB).start({ workflow: "secret-flow", input: { kind: { case: "stringValue", value: "b-only" } } })).task!.id;
    approvalB = await waitFor(async () => (await fx.client(ApprovalService, keyB).list({})).approvals[0]?.id, { what: "tenant B's approval" });
    await fx.client(ForeignAgentService, keyB).register({ agent: { agentKey: "b-agent", baseUrl: "https://b.example.com", allowHost: "b.example.com" } });
    sessionA = await signIn(fx.url, keyA);
    expect(sessionA.status).toBe(200);
  });
  afterAll(async () => {
    await workers?.stop();
    await fx?.cleanup();
  });

  /** A request naming tenant B's objects wherever the method has a field for one. */
  function bodyFor(service: string, method: DescMethod): Record<string, unknown> {
    const values: Record<string, unknown> = {
      id: service === "ApprovalService" ? approvalB : taskB,
      taskId: taskB,
      approvalId: approvalB,
      ref: "secret-flow",
      workflow: "secret-flow",
      agentKey: "b-agent",
      approve: true,
    };
    const body: Record<string, unknown> = {};
    for (const field of method.input.fields) if (field.jsonName in values) body[field.jsonName] = values[field.jsonName];
    return body;
  }

  it("no method of any tenant service shows tenant B's objects to tenant A's session", async () => {
    let called = 0;
    for (const service of TENANT_SERVICES) {
      for (const method of service.methods) {
        // Streams are checked below with a Connect client (they need the streaming envelope).
        if (method.methodKind !== "unary") continue;
        const path = `${service.typeName}/${method.name}`;
        const res = await sessionCall(fx.url, path, bodyFor(service.name, method), sessionA);
        called++;
        const text = JSON.stringify(res.body);
        // A refusal may repeat the id it was asked about; nothing else of B's, and a success nothing at all.
        const secrets = ["b-only", "b-output", "b.example.com", "tenant-b", ...(res.status === 200 ? [taskB, approvalB] : [])];
        for (const secret of secrets) expect(text, `${path} leaked ${secret}`).not.toContain(secret);
        // Naming B's object is NOT_FOUND (or a listing without it), never a success about it.
        if (res.status !== 200) expect([400, 404, 409], `${path}: ${text}`).toContain(res.status);
      }
    }
    expect(called).toBeGreaterThan(20);
    // B's approval is still pending and its task not cancelled: nothing A's session did reached them.
    expect((await fx.client(ApprovalService, keyB).list({})).approvals[0]).toMatchObject({ id: approvalB, status: 1 });
    expect((await fx.client(TaskService, keyB).get({ id: taskB })).task?.status).not.toBe(5);
  });

  it("Watch of tenant B's task fails for tenant A's session before it yields anything", async () => {
    const transport = createConnectTransport({
      baseUrl: fx.url,
      httpVersion: "1.1",
      interceptors: [
        (next) => (req) => {
          req.header.set("cookie", sessionA.cookie);
          req.header.set("x-csrf-token", sessionA.csrfToken);
          return next(req);
        },
      ],
    });
    const watch = async () => {
      for await (const _ of createClient(TaskService, transport).watch({ id: taskB })) return "yielded";
      return "ended";
    };
    const outcome = await watch().catch((error: unknown) => ConnectError.from(error).code);
    expect(outcome).toBe(Code.NotFound);
  });

  it("the specific reads answer NOT_FOUND or nothing", async () => {
    expect((await sessionCall(fx.url, "switchyard.api.v1.TaskService/Get", { id: taskB }, sessionA)).status).toBe(404);
    expect((await sessionCall(fx.url, "switchyard.api.v1.ApprovalService/Decide", { id: approvalB, approve: true }, sessionA)).status).toBe(404);
    expect((await sessionCall(fx.url, "switchyard.api.v1.WorkflowService/Get", { ref: "secret-flow" }, sessionA)).status).toBe(404);
    const rows = await sessionCall(fx.url, "switchyard.api.v1.AuditService/ListRows", { taskId: taskB }, sessionA);
    expect(rows).toMatchObject({ status: 200, body: { rows: [] } });
    // The same call as tenant B finds them: the rows exist.
    const own = await signIn(fx.url, keyB);
    expect((await sessionCall(fx.url, "switchyard.api.v1.AuditService/ListRows", { taskId: taskB }, own)).body.rows.length).toBeGreaterThan(0);
  });

  it("a Switchyard-Tenant header cannot make tenant A's session act for tenant B", async () => {
    const res = await sessionCall(fx.url, "switchyard.api.v1.TaskService/Get", { id: taskB }, sessionA, { "switchyard-tenant": "tenant-b" });
    expect(res.status).toBe(403);
  });

  it("admin services refuse a tenant's session", async () => {
    for (const service of ADMIN_SERVICES) {
      for (const method of service.methods) {
        const res = await sessionCall(fx.url, `${service.typeName}/${method.name}`, {}, sessionA);
        expect(res.status, method.name).toBe(403);
        expect(res.body.message).toContain("admin API key");
      }
    }
    expect((await fx.rt.pool.query("SELECT count(*)::int AS n FROM tenants")).rows[0].n).toBe(2);
  });

  it("an approval its own tenant decides in the console is recorded as decided via the console, not the API", async () => {
    const own = await signIn(fx.url, keyB);
    const decided = await sessionCall(fx.url, "switchyard.api.v1.ApprovalService/Decide", { id: approvalB, approve: true, reason: "looks right" }, own);
    expect(decided).toMatchObject({ status: 200, body: { status: "APPROVAL_STATUS_APPROVED" } });
    const listed = (await fx.client(ApprovalService, keyB).list({ taskId: taskB })).approvals.find((a) => a.id === approvalB);
    expect(listed).toMatchObject({ decidedVia: "console", decisionReason: "looks right" });
  });
});
