/**
 * A foreign hop dispatched by tenant traffic (the API runs every call under row-level security as the
 * switchyard_app role) signs its callback with the tenant's link key and completes like an operator's.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TaskService } from "../../../src/tasks/tasks.js";
import { tenantScoped } from "../../../src/store/tenant-scope.js";
import { startA2AAgent, type RunningA2AAgent } from "../../support/a2a-agents.js";
import { createForeignRuntime, type ForeignTestRuntime } from "./support.js";

const ORG = "acme";

describe("FOREIGN under tenant scope", () => {
  let rt: ForeignTestRuntime;
  let agent: RunningA2AAgent;
  beforeEach(async () => {
    rt = await createForeignRuntime();
    agent = await startA2AAgent({ dialect: "1.0", name: "scoped" });
    rt.startCoordinator();
  });
  afterEach(async () => {
    await agent.close();
    await rt.cleanup();
  });

  it("starts and completes a foreign step from a tenant-scoped task service", async () => {
    await rt.register(ORG, { agentKey: "helper", baseUrl: agent.baseUrl });
    await rt.submit(ORG, `name: ask\nsteps:\n  - { id: b, to: "foreign:helper" }\n`);
    const scoped = new TaskService({ pool: rt.pool, engine: rt.engine, approvals: rt.stores.approvals, tasks: rt.stores.tasks, replies: rt.stores.replies, publisher: rt.publisher, maxPayloadBytes: 1 << 20, transact: tenantScoped(rt.pool) });
    const { taskId } = await scoped.start({ orgId: ORG, workflow: "ask", input: { q: 1 } });
    const task = await rt.finished(ORG, taskId);
    expect(task.status).toBe("completed");
    expect(agent.received.length).toBeGreaterThanOrEqual(1);
  });
});
