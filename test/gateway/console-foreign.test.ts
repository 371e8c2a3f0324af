/**
 * A foreign hop as the console shows it, against a real A2A agent on loopback: the task's foreign step carries its
 * bridge and its a2a_egress attempt, and ForeignAgentService.Status shows the agent's breaker and recent bridges.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import { createApiTransport } from "../../src/cli/remote/transport.js";
import { ForeignAgentService } from "../../src/gen/switchyard/api/v1/foreign_pb.js";
import { TaskService } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { startGateway, type Gateway } from "../../src/gateway/server.js";
import { createTenantWithKey } from "../../src/tenancy/bootstrap.js";
import { startA2AAgent, type RunningA2AAgent } from "../support/a2a-agents.js";
import { createForeignRuntime, type ForeignTestRuntime } from "../foreign/integration/support.js";

const ORG = "acme";

describe("foreign hops on the console's pages", () => {
  let rt: ForeignTestRuntime;
  let helper: RunningA2AAgent;
  let gateway: Gateway;
  let key: string;
  beforeAll(async () => {
    rt = await createForeignRuntime();
    key = (await createTenantWithKey(rt.stores, rt.pool, { orgId: ORG, name: "Acme" })).apiKey.secret;
    helper = await startA2AAgent({ dialect: "1.0" });
    await rt.register(ORG, { agentKey: "helper", baseUrl: helper.baseUrl });
    await rt.submit(ORG, "name: ask\nsteps:\n  - { id: b, to: \"foreign:helper\" }\n");
    rt.startCoordinator();
    gateway = await startGateway(rt, { port: 0, host: "127.0.0.1", collectMetrics: false });
  });
  afterAll(async () => {
    await gateway?.close();
    await helper?.close();
    await rt?.cleanup();
  });

  it("shows the bridge on the task's step and on the agent's status", async () => {
    const transport = createApiTransport({ url: gateway.url, token: key });
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "ask", input: { q: 1 } });
    const finished = await rt.finished(ORG, taskId);
    expect(finished.status).toBe("completed");

    const task = (await createClient(TaskService, transport).get({ id: taskId })).task!;
    const step = task.steps.find((s) => s.id === "b")!;
    expect(step.history.map((a) => [a.action, a.destination, a.outcome])).toEqual([["a2a_egress", "foreign:helper", "completed"]]);
    expect(step.bridges).toHaveLength(1);
    expect(step.bridges[0]).toMatchObject({ agentKey: "helper", taskId, stepId: "b", status: "completed", dialect: "1.0" });
    expect(step.bridges[0]!.foreignTaskId).not.toBe("");
    expect(step.bridges[0]!.resolvedAt).toBeDefined();

    const status = await createClient(ForeignAgentService, transport).status({ agentKey: "helper" });
    expect(status.breaker).toBe("closed");
    expect(status.openBridges).toBe(0);
    expect(status.bridges.map((b) => [b.id, b.status])).toEqual([[step.bridges[0]!.id, "completed"]]);
    // A status view: the request sent and the notification secret's hash are not in it.
    expect(Object.keys(status.bridges[0]!).filter((k) => /request|notification|artifact/i.test(k))).toEqual([]);
  });
});
