/**
 * What the API adds for the console's pages, through a real gateway, coordinator and harness: each step's attempts
 * (retries, approvals) and delegation links in TaskService.Get and Watch, a task's audit rows, the flag history,
 * and an agent's status where this gateway makes no foreign calls.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createApiTransport } from "../../src/cli/remote/transport.js";
import { startGateway } from "../../src/gateway/server.js";
import { AdminService, FlagScopeKind } from "../../src/gen/switchyard/api/v1/admin_pb.js";
import { ApprovalService } from "../../src/gen/switchyard/api/v1/approvals_pb.js";
import { AuditService } from "../../src/gen/switchyard/api/v1/audit_pb.js";
import { ForeignAgentService } from "../../src/gen/switchyard/api/v1/foreign_pb.js";
import { TaskService, type Task } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../../src/gen/switchyard/api/v1/workflows_pb.js";
import { waitFor } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { codeOf, createGatewayFixture, type GatewayFixture } from "./fixture.js";

const ORG = "console-api";
const FLOW = `
name: timeline
steps:
  - { id: flaky, to: "role:flaky", retries: 2, backoff: 10ms }
  - { id: gated, to: "role:echo", needs: [flaky], approval: true }
`;
const DELEGATING = `
name: asks
steps:
  - { id: research, to: "role:researcher" }
`;

describe("console API additions", () => {
  let fx: GatewayFixture;
  let workers: Workers;
  let key: string;
  let admin: string;
  let flakyCalls = 0;
  beforeAll(async () => {
    fx = await createGatewayFixture();
    key = await fx.tenant(ORG);
    admin = await fx.adminKey();
    fx.rt.startCoordinator();
    workers = new Workers(fx.rt);
    workers.start("flaky", async () => {
      flakyCalls++;
      if (flakyCalls === 1) throw new Error("first try fails");
      return { ok: true };
    });
    workers.start("echo", async (work) => ({ echoed: work.input }));
    workers.start("researcher", async (work, ctx) => {
      if (work.resume) return { answer: "from analyst" };
      return ctx.delegate("role:analyst", { q: "tides" }, { correlationId: "ask-1" });
    });
    workers.start("analyst", async () => ({ tides: "moon" }));
    await fx.client(WorkflowService, key).submit({ source: FLOW });
    await fx.client(WorkflowService, key).submit({ source: DELEGATING });
  });
  afterAll(async () => {
    await workers?.stop();
    await fx?.cleanup();
  });

  const stepOf = (task: Task | undefined, id: string) => task!.steps.find((s) => s.id === id)!;

  it("TaskService.Get shows each attempt: a failed try and its retry, an approval and who gave it", async () => {
    const tasks = fx.client(TaskService, key);
    const taskId = (await tasks.start({ workflow: "timeline" })).task!.id;
    const approvalId = await waitFor(async () => (await fx.client(ApprovalService, key).list({})).approvals.find((a) => a.taskId === taskId)?.id, { what: "the gated step's approval" });

    const parked = (await tasks.get({ id: taskId })).task;
    const gatedWaiting = stepOf(parked, "gated").history;
    expect(gatedWaiting).toHaveLength(1);
    expect(gatedWaiting[0]).toMatchObject({ attempt: 1, action: "dispatch", destination: "role:echo", outcome: "awaiting_approval", verdict: "requires_approval" });
    expect(gatedWaiting[0]!.finishedAt).toBeUndefined();

    await fx.client(ApprovalService, key).decide({ id: approvalId, approve: true, actor: "ann", reason: "looks fine" });
    await waitForTask(fx.rt.tasks, ORG, taskId);
    const done = (await tasks.get({ id: taskId })).task!;
    expect(done.status).toBe(3);

    const flaky = stepOf(done, "flaky").history;
    expect(flaky.map((a) => [a.attempt, a.outcome, a.verdict])).toEqual([
      [1, "failed", "allow"],
      [2, "completed", "allow"],
    ]);
    expect(flaky[0]!.reason).toContain("first try fails");
    for (const attempt of flaky) {
      expect(attempt.dispatchedAt).toBeDefined();
      expect(attempt.finishedAt).toBeDefined();
      expect(Number(attempt.durationMs)).toBeGreaterThanOrEqual(0);
      expect(Number(attempt.seq)).toBeGreaterThan(0);
    }
    expect(Number(flaky[1]!.seq)).toBeGreaterThan(Number(flaky[0]!.seq));

    const gated = stepOf(done, "gated").history;
    expect(gated).toHaveLength(1);
    expect(gated[0]).toMatchObject({ attempt: 1, outcome: "completed" });
    expect(gated[0]!.approvedBy).toContain("ann");
    expect(stepOf(done, "gated").depth).toBe(0);
    expect(stepOf(done, "gated").parentStepId).toBeUndefined();

    // The hop rows the history points at are the task's audit rows.
    const rows = (await fx.client(AuditService, key).listRows({ taskId })).rows;
    expect(rows.every((r) => r.taskId === taskId)).toBe(true);
    for (const attempt of [...flaky, ...gated]) expect(rows.map((r) => r.seq)).toContain(attempt.seq);

    // JSON as the console reads it: camelCase, int64 as strings.
    const raw = await fetch(`${fx.url}/switchyard.api.v1.TaskService/Get`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ id: taskId }),
    });
    const json = (await raw.json()) as { task: { steps: Array<{ id: string; history: Array<Record<string, unknown>> }> } };
    const first = json.task.steps.find((s) => s.id === "flaky")!.history[0]!;
    expect(first).toMatchObject({ attempt: 1, outcome: "failed", action: "dispatch" });
    expect(typeof first.dispatchedAt).toBe("string");
  });

  it("a delegation step names its parent step, correlation id and depth; Watch carries the history too", async () => {
    const tasks = fx.client(TaskService, key);
    const taskId = (await tasks.start({ workflow: "asks" })).task!.id;
    await waitForTask(fx.rt.tasks, ORG, taskId);
    const task = (await tasks.get({ id: taskId })).task!;
    const delegate = stepOf(task, "research.d1");
    expect(delegate).toMatchObject({ parentStepId: "research", correlationId: "ask-1", depth: 1 });
    expect(delegate.history.map((a) => [a.action, a.outcome])).toEqual([["sub_query", "completed"]]);
    expect(stepOf(task, "research").history.map((a) => a.outcome)).toEqual(["completed"]);

    let watched: Task | undefined;
    for await (const update of tasks.watch({ id: taskId })) watched = update.task;
    expect(stepOf(watched, "research.d1").history).toHaveLength(1);
  });

  it("AdminService.ListFlagHistory lists every change newest first, filtered by flag and scope", async () => {
    const adminClient = fx.client(AdminService, admin);
    await adminClient.setFlag({ name: "BUS_ENABLED", scopeKind: FlagScopeKind.GLOBAL, enabled: true, reason: "first" });
    await adminClient.setFlag({ name: "A2A_EGRESS_ENABLED", scopeKind: FlagScopeKind.TENANT, scope: ORG, enabled: true, reason: "pilot" });
    await adminClient.setFlag({ name: "BUS_ENABLED", scopeKind: FlagScopeKind.GLOBAL, enabled: false, reason: "incident 42" });

    const all = (await adminClient.listFlagHistory({})).changes;
    expect(all.slice(0, 3).map((c) => [c.name, c.enabled, c.reason])).toEqual([
      ["BUS_ENABLED", false, "incident 42"],
      ["A2A_EGRESS_ENABLED", true, "pilot"],
      ["BUS_ENABLED", true, "first"],
    ]);
    expect(all[0]).toMatchObject({ scopeKind: FlagScopeKind.GLOBAL, scope: "", chain: "_system" });
    expect(all[0]!.actor).toContain("apikey:sre");
    expect(all[1]).toMatchObject({ scopeKind: FlagScopeKind.TENANT, scope: ORG, chain: ORG });

    const bus = (await adminClient.listFlagHistory({ name: "BUS_ENABLED" })).changes;
    expect(bus.map((c) => c.reason)).toEqual(["incident 42", "first"]);
    const tenant = (await adminClient.listFlagHistory({ scopeKind: FlagScopeKind.TENANT, scope: ORG })).changes;
    expect(tenant.map((c) => c.name)).toEqual(["A2A_EGRESS_ENABLED"]);
    expect((await adminClient.listFlagHistory({ limit: 1 })).changes).toHaveLength(1);
    // The next page starts before the last change shown.
    const older = (await adminClient.listFlagHistory({ name: "BUS_ENABLED", beforeMs: bus[0]!.atMs })).changes;
    expect(older.every((c) => c.atMs < bus[0]!.atMs)).toBe(true);
  });

  it("ListFlagHistory refuses bad filters and tenant keys", async () => {
    const adminClient = fx.client(AdminService, admin);
    const unknown = await adminClient.listFlagHistory({ name: "NOPE" }).catch((e: unknown) => ConnectError.from(e));
    expect((unknown as ConnectError).code).toBe(Code.InvalidArgument);
    expect((unknown as ConnectError).rawMessage).toContain("unknown flag");
    expect(await codeOf(adminClient.listFlagHistory({ limit: 501 }))).toBe(Code.InvalidArgument);
    expect(await codeOf(adminClient.listFlagHistory({ scope: ORG }))).toBe(Code.InvalidArgument);
    expect(await codeOf(fx.client(AdminService, key).listFlagHistory({}))).toBe(Code.PermissionDenied);
  });

  it("ForeignAgentService.Status: the agent, no bridges yet, and the breaker as this process sees it", async () => {
    const foreign = fx.client(ForeignAgentService, key);
    await foreign.register({ agent: { agentKey: "quiet", baseUrl: "https://quiet.example.com", allowHost: "quiet.example.com" } });
    // This runtime makes foreign calls (runtime.a2a): an agent never called has a closed breaker.
    const status = await foreign.status({ agentKey: "quiet" });
    expect(status).toMatchObject({ breaker: "closed", openBridges: 0, bridges: [] });
    expect(status.agent?.agentKey).toBe("quiet");
    expect(await codeOf(foreign.status({ agentKey: "ghost" }))).toBe(Code.NotFound);
    expect(await codeOf(foreign.status({ agentKey: "quiet", bridgeLimit: 201 }))).toBe(Code.InvalidArgument);

    // A gateway whose process makes no foreign calls cannot know the breaker: it says so.
    const apiOnly = await startGateway({ ...fx.rt, a2a: undefined }, { port: 0, host: "127.0.0.1", collectMetrics: false });
    try {
      const remote = createClient(ForeignAgentService, createApiTransport({ url: apiOnly.url, token: key }));
      expect((await remote.status({ agentKey: "quiet" })).breaker).toBe("unknown");
    } finally {
      await apiOnly.close();
    }
  });
});
