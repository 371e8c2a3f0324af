/**
 * Every service of the API, round trip through the Connect client (binary) and with plain JSON over fetch (what
 * curl sends), against a real gateway, Postgres and Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { AdminService, ApiKeyKind, FlagScopeKind } from "../../src/gen/switchyard/api/v1/admin_pb.js";
import { ApprovalService, ApprovalStatus } from "../../src/gen/switchyard/api/v1/approvals_pb.js";
import { AuditService } from "../../src/gen/switchyard/api/v1/audit_pb.js";
import { ErrorDetailSchema } from "../../src/gen/switchyard/api/v1/errors_pb.js";
import { ForeignAgentService, ForeignProtocol } from "../../src/gen/switchyard/api/v1/foreign_pb.js";
import { TaskService, TaskStatus } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../../src/gen/switchyard/api/v1/workflows_pb.js";
import { fromValue, toValue } from "../../src/gateway/convert/values.js";
import { Workers } from "../support/workers.js";
import { createGatewayFixture, postJson, type GatewayFixture } from "./fixture.js";

const FLOW = `
name: gated
steps:
  - { id: draft, to: "role:echo" }
  - { id: publish, to: "role:echo", approval: true }
`;

async function connectError(promise: Promise<unknown>): Promise<ConnectError> {
  try {
    await promise;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected the call to fail");
}

describe("gateway services", () => {
  let fx: GatewayFixture;
  let key: string;
  let adminKey: string;
  beforeAll(async () => {
    fx = await createGatewayFixture();
    key = await fx.tenant("acme");
    adminKey = await fx.adminKey();
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it("WorkflowService: submit, get and list; an identical definition returns the stored version", async () => {
    const workflows = fx.client(WorkflowService, key);
    const first = await workflows.submit({ source: FLOW });
    expect(first).toMatchObject({ name: "gated", version: 1, ref: "gated@1", created: true });
    expect((await workflows.submit({ source: FLOW })).created).toBe(false);
    const got = await workflows.get({ ref: "gated" });
    expect(got.workflow?.ref).toBe("gated@1");
    expect(got.workflow?.definition).toMatchObject({ name: "gated", steps: [{ id: "draft", to: "role:echo" }, { id: "publish", approval: true }] });
    const listed = await workflows.list({});
    expect(listed.workflows.map((w) => [w.ref, w.versions])).toEqual([["gated@1", 1]]);

    const raw = await postJson(fx.url, "switchyard.api.v1.WorkflowService/Get", { ref: "gated@1" }, key);
    expect(raw.status).toBe(200);
    expect(raw.body.workflow).toMatchObject({ name: "gated", version: 1, ref: "gated@1", definition: { name: "gated" } });
  });

  it("WorkflowService: an invalid definition is INVALID_ARGUMENT naming the field path, in the message and the details", async () => {
    const workflows = fx.client(WorkflowService, key);
    const error = await connectError(workflows.submit({ source: "name: bad\nsteps:\n  - { id: a, to: 'nowhere' }\n" }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toMatch(/^steps\[0\]\.to: /);
    const [detail] = error.findDetails(ErrorDetailSchema);
    expect(detail).toMatchObject({ code: "INVALID_WORKFLOW", path: "steps[0].to" });
    expect(detail!.violations[0]).toMatchObject({ path: "steps[0].to" });

    const raw = await postJson(fx.url, "switchyard.api.v1.WorkflowService/Submit", { source: "name: bad\nsteps: []\n" }, key);
    expect(raw.status).toBe(400);
    expect(raw.body.code).toBe("invalid_argument");
    expect(raw.body.message).toContain("steps");
    expect(raw.body.details[0]).toMatchObject({ type: "switchyard.api.v1.ErrorDetail", debug: { code: "INVALID_WORKFLOW" } });
  });

  it("TaskService: start, get, list with filters and paging, cancel; the same idempotency key returns the same task", async () => {
    const tasks = fx.client(TaskService, key);
    const started = await tasks.start({ workflow: "gated", input: toValue({ topic: "x", n: 1 }), idempotencyKey: "k-1" });
    expect(started.created).toBe(true);
    expect(started.task).toMatchObject({ orgId: "acme", workflow: "gated@1", status: TaskStatus.RUNNING });
    expect(fromValue(started.task!.input)).toEqual({ topic: "x", n: 1 });
    const again = await tasks.start({ workflow: "gated", input: toValue({ other: true }), idempotencyKey: "k-1" });
    expect(again.created).toBe(false);
    expect(again.task!.id).toBe(started.task!.id);

    const raw = await postJson(fx.url, "switchyard.api.v1.TaskService/Start", { workflow: "gated@1", input: { via: "curl" }, idempotencyKey: "k-1" }, key);
    expect(raw.status).toBe(200);
    expect(raw.body).toMatchObject({ task: { id: started.task!.id, status: "TASK_STATUS_RUNNING", input: { topic: "x", n: 1 } } });
    expect(raw.body.created).toBe(false); // written out, not left implicit

    const ids = [started.task!.id];
    for (let i = 0; i < 4; i++) ids.push((await tasks.start({ workflow: "gated" })).task!.id);
    const got = await tasks.get({ id: ids[2]! });
    expect(got.task?.steps.map((s) => s.id)).toEqual(["draft", "publish"]);

    const page1 = await tasks.list({ pageSize: 2 });
    const page2 = await tasks.list({ pageSize: 2, pageToken: page1.nextPageToken });
    const page3 = await tasks.list({ pageSize: 2, pageToken: page2.nextPageToken });
    expect(page3.nextPageToken).toBe("");
    const listed = [...page1.tasks, ...page2.tasks, ...page3.tasks].map((t) => t.id);
    expect(listed).toEqual([...ids].reverse());

    const cancelled = await tasks.cancel({ id: ids[1]!, reason: "not needed", actor: "ann" });
    expect(cancelled).toMatchObject({ alreadyFinished: false, task: { status: TaskStatus.CANCELLED } });
    expect((await tasks.cancel({ id: ids[1]! })).alreadyFinished).toBe(true);
    expect((await tasks.list({ statuses: [TaskStatus.CANCELLED] })).tasks.map((t) => t.id)).toEqual([ids[1]]);
    expect((await tasks.list({ workflow: "gated@1", statuses: [TaskStatus.RUNNING] })).tasks).toHaveLength(4);
    expect((await tasks.list({ workflow: "other" })).tasks).toHaveLength(0);
    // A time window, from the tasks' own creation times: the newest two, then everything before them.
    const created = await fx.rt.pool.query<{ id: string; at: Date }>("SELECT id, created_at AS at FROM tasks WHERE id = ANY($1::uuid[]) ORDER BY created_at, id", [ids]);
    const cut = created.rows.at(-2)!.at;
    const recent = (await tasks.list({ createdAfter: timestampFromDate(cut) })).tasks.map((t) => t.id);
    expect(recent).toEqual(created.rows.slice(-2).map((r) => r.id).reverse());
    const earlier = (await tasks.list({ createdBefore: timestampFromDate(cut) })).tasks.map((t) => t.id);
    expect(earlier).toEqual(created.rows.slice(0, -2).map((r) => r.id).reverse());
    expect((await tasks.list({ createdAfter: timestampFromDate(new Date(Date.now() + 60_000)) })).tasks).toEqual([]);
    const audit = await fx.rt.pool.query("SELECT actor, reason FROM audit_log WHERE task_id = $1 AND action = 'cancel'", [ids[1]]);
    expect(audit.rows[0]).toEqual({ actor: "ann (apikey:default)", reason: "not needed" });

    const badToken = await connectError(tasks.list({ pageToken: "garbage" }));
    expect(badToken.code).toBe(Code.InvalidArgument);
    expect(badToken.rawMessage).toMatch(/^page_token: /);
    const missing = await connectError(tasks.start({ workflow: "nope" }));
    expect(missing.code).toBe(Code.NotFound);
    const noWorkflow = await connectError(tasks.start({ workflow: "" }));
    expect(noWorkflow.code).toBe(Code.InvalidArgument);
    expect(noWorkflow.rawMessage).toMatch(/^workflow: /);
  });

  it("ApprovalService: list and decide; a second decision returns the first outcome", async () => {
    const tasks = fx.client(TaskService, key);
    const approvals = fx.client(ApprovalService, key);
    // `draft` runs on a real worker; `publish` then parks on its approval.
    fx.rt.startCoordinator();
    const workers = new Workers(fx.rt);
    workers.start("echo", async () => ({ ok: true }));
    const { task } = await tasks.start({ workflow: "gated", idempotencyKey: "approve-me" });
    try {
      let pending: Awaited<ReturnType<typeof approvals.list>>["approvals"] = [];
      for (let i = 0; i < 200 && pending.length === 0; i++) {
        pending = (await approvals.list({ status: ApprovalStatus.PENDING, taskId: task!.id })).approvals;
        if (pending.length === 0) await new Promise((r) => setTimeout(r, 50));
      }
      expect(pending).toHaveLength(1);
      expect(pending[0]).toMatchObject({ taskId: task!.id, stepId: "publish", action: "dispatch", destination: "role:echo", rule: "builtin:approval-hint", status: ApprovalStatus.PENDING });
      expect(pending[0]!.expiresAt).toBeDefined();

      const raw = await postJson(fx.url, "switchyard.api.v1.ApprovalService/Decide", { id: pending[0]!.id, approve: true, reason: "fine", actor: "ann" }, key);
      expect(raw.status).toBe(200);
      expect(raw.body).toMatchObject({ approvalId: pending[0]!.id, status: "APPROVAL_STATUS_APPROVED", decidedBy: "ann (apikey:default)" });
      const second = await approvals.decide({ id: pending[0]!.id, approve: false });
      expect(second).toMatchObject({ status: ApprovalStatus.APPROVED, alreadyDecided: true, decidedBy: "ann (apikey:default)" });
      const decided = (await approvals.list({ taskId: task!.id })).approvals[0]!;
      expect(decided).toMatchObject({ status: ApprovalStatus.APPROVED, decidedVia: "api" });
      const unknown = await connectError(approvals.decide({ id: "00000000-0000-4000-8000-000000000000", approve: true }));
      expect(unknown.code).toBe(Code.NotFound);
    } finally {
      await workers.stop();
    }
  });

  it("AuditService: verify, list rows, list and export checkpoints", async () => {
    const audit = fx.client(AuditService, key);
    const verified = await audit.verify({});
    expect(verified.orgId).toBe("acme");
    expect(verified.ok).toBe(true);
    expect(verified.headSeq).toBeGreaterThan(0n);
    const rows = await audit.listRows({ limit: 3 });
    expect(rows.rows.map((r) => r.seq)).toEqual([1n, 2n, 3n]);
    const after = await audit.listRows({ afterSeq: 2n, limit: 1 });
    expect(after.rows.map((r) => r.seq)).toEqual([3n]);
    // Newest first, paged backwards from the head: the console's latest rows without reading the chain from seq 1.
    const head = verified.headSeq;
    const newest = await audit.listRows({ newestFirst: true, limit: 2 });
    expect(newest.rows.map((r) => r.seq)).toEqual([head, head - 1n]);
    const older = await audit.listRows({ newestFirst: true, beforeSeq: head - 1n, limit: 2 });
    expect(older.rows.map((r) => r.seq)).toEqual([head - 2n, head - 3n].filter((s) => s > 0n));
    expect((await audit.listCheckpoints({})).checkpoints).toEqual([]);
    expect((await audit.exportCheckpoints({})).jsonl).toBe("");

    const raw = await postJson(fx.url, "switchyard.api.v1.AuditService/ListRows", { limit: 1 }, key);
    expect(raw.status).toBe(200);
    // The first row is the TaskService test's cancel: starts through the gateway are dispatched by the shard owner,
    // and no coordinator ran before the ApprovalService test.
    expect(raw.body.rows[0]).toMatchObject({ orgId: "acme", seq: "1", action: "cancel" });
  });

  it("ForeignAgentService: register, get, list, update, disable, with validation naming the field", async () => {
    const foreign = fx.client(ForeignAgentService, key);
    const registered = await foreign.register({
      agent: { agentKey: "summarizer", baseUrl: "https://agents.example.com/a2a", allowHost: "agents.example.com", skills: ["summarize"], clearanceCeiling: 2, credentialRef: "env:SUMMARIZER_TOKEN" },
    });
    expect(registered.agent).toMatchObject({ agentKey: "summarizer", protocol: ForeignProtocol.AUTO, enabled: true, idempotent: false, skills: ["summarize"], credentialRef: "env:SUMMARIZER_TOKEN" });
    const dup = await connectError(foreign.register({ agent: { agentKey: "summarizer", baseUrl: "https://agents.example.com", allowHost: "agents.example.com" } }));
    expect(dup.code).toBe(Code.AlreadyExists);
    const bad = await connectError(foreign.register({ agent: { agentKey: "x", baseUrl: "ftp://agents.example.com", allowHost: "" } }));
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.rawMessage).toContain("agent.base_url");
    expect(bad.rawMessage).toContain("agent.allow_host");
    const secret = await connectError(
      foreign.register({ agent: { agentKey: "y", baseUrl: "https://a.example.com", allowHost: "a.example.com", credentialRef: "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c" } }),
    );
    expect(secret.rawMessage).toMatch(/^agent\.credential_ref: .*secret/);

    expect((await foreign.get({ agentKey: "summarizer" })).agent?.baseUrl).toBe("https://agents.example.com/a2a");
    const updated = await foreign.update({ agent: { agentKey: "summarizer", protocol: ForeignProtocol.V1_0, skills: ["summarize", "translate"] }, updateMask: { paths: ["protocol", "skills"] } });
    expect(updated.agent).toMatchObject({ protocol: ForeignProtocol.V1_0, skills: ["summarize", "translate"], baseUrl: "https://agents.example.com/a2a" });
    // Re-sends are an explicit opt-in, through the update mask like any field.
    const idempotent = await foreign.update({ agent: { agentKey: "summarizer", idempotent: true }, updateMask: { paths: ["idempotent"] } });
    expect(idempotent.agent).toMatchObject({ idempotent: true, protocol: ForeignProtocol.V1_0 });
    const idempotentAtRegister = await foreign.register({ agent: { agentKey: "retryable", baseUrl: "https://agents.example.com", allowHost: "agents.example.com", idempotent: true } });
    expect(idempotentAtRegister.agent?.idempotent).toBe(true);
    const noMask = await connectError(foreign.update({ agent: { agentKey: "summarizer", enabled: false } }));
    expect(noMask.rawMessage).toMatch(/^update_mask: /);
    expect((await foreign.disable({ agentKey: "summarizer" })).agent?.enabled).toBe(false);

    const raw = await postJson(fx.url, "switchyard.api.v1.ForeignAgentService/Update", { agent: { agentKey: "summarizer", enabled: true }, updateMask: "enabled" }, key);
    expect(raw.status).toBe(200);
    expect(raw.body.agent).toMatchObject({ agentKey: "summarizer", enabled: true, protocol: "FOREIGN_PROTOCOL_V1_0" });
    expect((await foreign.list({})).agents.map((a) => [a.agentKey, a.enabled])).toEqual([["retryable", true], ["summarizer", true]]);
  });

  it("AdminService: tenants, keys, budgets, flags and dead letters", async () => {
    const admin = fx.client(AdminService, adminKey);
    const created = await admin.createTenant({ orgId: "globex", name: "Globex", dailyBudget: 50 });
    expect(created.tenant).toMatchObject({ orgId: "globex", name: "Globex", dailyBudget: 50 });
    expect(created.secret).toMatch(/^sy_[A-Za-z0-9_-]{43}$/);
    expect(created.apiKey).toMatchObject({ kind: ApiKeyKind.TENANT, orgId: "globex", prefix: created.secret.slice(0, 11) });
    // The new key works at once, for its own tenant.
    expect((await fx.client(WorkflowService, created.secret).list({})).workflows).toEqual([]);

    const budget = await admin.setTenantBudget({ orgId: "globex", dailyBudget: 75 });
    expect(budget.tenant?.dailyBudget).toBe(75);
    expect((await admin.setTenantBudget({ orgId: "globex" })).tenant?.dailyBudget).toBeUndefined();
    expect((await admin.listTenants({})).tenants.map((t) => t.orgId)).toEqual(["acme", "globex"]);

    const second = await admin.createApiKey({ orgId: "globex", name: "ci" });
    const keys = await admin.listApiKeys({ orgId: "globex" });
    expect(keys.apiKeys.map((k) => k.name)).toEqual(["default", "ci"]);
    const revoked = await admin.revokeApiKey({ id: second.apiKey!.id });
    expect(revoked.apiKey?.revokedAt).toBeDefined();
    const noTenant = await connectError(admin.createApiKey({ orgId: "nobody", name: "x" }));
    expect(noTenant.code).toBe(Code.NotFound);

    const flag = await admin.setFlag({ name: "HARNESS_ENABLED", scopeKind: FlagScopeKind.ROLE, scope: "writer", enabled: false, reason: "draining writer" });
    expect(flag.flag).toMatchObject({ name: "HARNESS_ENABLED", scopeKind: FlagScopeKind.ROLE, scope: "writer", enabled: false, updatedBy: "apikey:sre" });
    expect((await admin.listFlags({})).flags.map((f) => `${f.name}/${f.scope}/${f.enabled}`)).toContain("HARNESS_ENABLED/writer/false");
    const badFlag = await connectError(admin.setFlag({ name: "NOPE", enabled: true, reason: "x" }));
    expect(badFlag.code).toBe(Code.InvalidArgument);

    await fx.rt.bus.publishEncoded([{ stream: "role:writer", data: new Uint8Array([1, 2, 3]) }]);
    await fx.rt.bus.ensureGroup("role:writer", "harness");
    // An undecodable entry is dead-lettered on read.
    await fx.rt.bus.read({ stream: "role:writer", group: "harness", consumer: "t", count: 10, blockMs: 10 });
    const letters = await admin.listDeadLetters({});
    expect(letters.deadLetters.map((l) => l.stream)).toEqual(["role:writer"]);
    expect(letters.deadLetters[0]!.envelope).toBeUndefined();
    const replayed = await admin.replayDeadLetters({ stream: "role:writer", all: true });
    expect(replayed.replayed).toBe(1);
    // FOREIGN hops not re-sent are listed (none here), never replayed: a replay would be the refused re-send.
    expect((await admin.listDeadLetters({ stream: "foreign:helper" })).deadLetters).toEqual([]);
    const foreignReplay = await connectError(admin.replayDeadLetters({ stream: "foreign:helper", all: true }));
    expect(foreignReplay.code).toBe(Code.FailedPrecondition);
    expect(foreignReplay.rawMessage).toMatch(/never replayed/);

    const raw = await postJson(fx.url, "switchyard.api.v1.AdminService/ListTenants", {}, adminKey);
    expect(raw.status).toBe(200);
    expect(raw.body.tenants.map((t: { orgId: string }) => t.orgId)).toEqual(["acme", "globex"]);
  });

  it("an admin key reaches tenant services only when it names the tenant", async () => {
    const missing = await connectError(fx.client(AuditService, adminKey).verify({}));
    expect(missing.code).toBe(Code.InvalidArgument);
    expect(missing.rawMessage).toContain("switchyard-tenant");
    const verified = await fx.client(AuditService, adminKey, { tenant: "acme" }).verify({});
    expect(verified).toMatchObject({ orgId: "acme", ok: true });
  });
});
