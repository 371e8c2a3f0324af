/**
 * Bad input at the coordinator's inbox gets a dead letter with a reason (or is refused) and disturbs nothing else.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COORDINATOR_STREAM } from "../../src/bus/bus.js";
import { streamKey } from "../../src/bus/keys.js";
import { EnvelopeKind, ResultStatus, createEnvelope, jsonPayload } from "../../src/bus/codec.js";
import { COORDINATOR_GROUP } from "../../src/coordinator/coordinator.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { createTestRuntime, waitFor, type TestRuntime } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { publishSigned } from "../support/bus-auth.js";

const ORG = "acme";

describe("bad input at the coordinator", () => {
  let rt: TestRuntime;
  let workers: Workers;
  beforeEach(async () => {
    rt = await createTestRuntime();
    workers = new Workers(rt);
    await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition("name: one\nsteps:\n  - { id: a, to: \"role:slowpoke\", timeout: 10s }\n"));
    await submitWorkflow(rt.pool, "globex", parseWorkflowDefinition("name: one\nsteps:\n  - { id: a, to: \"role:echo\" }\n"));
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  function result(fields: { id?: string; taskId?: string; orgId?: string; attempt?: number }) {
    return createEnvelope({
      id: crypto.randomUUID(),
      orgId: ORG,
      kind: EnvelopeKind.RESULT,
      status: ResultStatus.OK,
      attempt: 1,
      stepId: "a",
      payload: jsonPayload({ forged: true }),
      ...fields,
    });
  }

  it("dead-letters undecodable and malformed envelopes with a reason, and keeps processing the rest", async () => {
    // Garbage bytes straight onto the stream, an envelope whose task id is not a UUID, a CONTROL that is not a
    // heartbeat, and a worker's RESULT whose envelope id takes the shape of a task start's event id; then a valid
    // task that must still complete.
    await rt.redis.xadd(streamKey(rt.prefix, COORDINATOR_STREAM), "*", "e", Buffer.from([0xff, 0x01, 0x02, 0x03]));
    await publishSigned(rt, "role:slowpoke", [result({ taskId: "not-a-uuid" })]);
    await publishSigned(rt, "role:slowpoke", [
      createEnvelope({ id: crypto.randomUUID(), orgId: ORG, taskId: crypto.randomUUID(), stepId: "a", kind: EnvelopeKind.CONTROL, payload: jsonPayload({ type: "reboot" }) }),
    ]);
    await publishSigned(rt, "role:slowpoke", [result({ id: `start:${crypto.randomUUID()}`, taskId: crypto.randomUUID() })]);
    rt.startCoordinator();
    workers.start("echo", async () => "fine");
    const { taskId } = await rt.tasks.start({ orgId: "globex", workflow: "one" });
    await waitForTask(rt.tasks, "globex", taskId, { until: (t) => t.status === "completed" });
    const dead = await waitFor(async () => {
      const letters = await rt.bus.listDeadLetters(COORDINATOR_STREAM);
      return letters.length >= 4 ? letters : undefined;
    });
    const reasons = dead.map((d) => d.reason).join("\n");
    expect(reasons).toMatch(/MALFORMED_ENVELOPE: envelope does not decode/);
    expect(reasons).toMatch(/MALFORMED_ENVELOPE: task_id "not-a-uuid" is not a UUID/);
    expect(reasons).toMatch(/MALFORMED_ENVELOPE: CONTROL envelope is not a heartbeat/);
    expect(reasons).toMatch(/MALFORMED_ENVELOPE: envelope id "start:[0-9a-f-]+" from role:slowpoke is not a UUID/);
    const stats = await rt.bus.stats(COORDINATOR_STREAM, COORDINATOR_GROUP);
    expect(stats.pending).toBe(0);
  });

  it("refuses a RESULT that claims another tenant's task, and a RESULT for a step attempt that is not in flight", async () => {
    rt.startCoordinator();
    const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: "one" });
    // Forged by "globex" for acme's task, then a stale attempt number from acme itself.
    await publishSigned(rt, "role:slowpoke", [result({ orgId: "globex", taskId })]);
    await publishSigned(rt, "role:slowpoke", [result({ taskId, attempt: 7 })]);
    await waitFor(async () => (await rt.bus.stats(COORDINATOR_STREAM, COORDINATOR_GROUP)).pending === 0 || undefined);
    await new Promise((r) => setTimeout(r, 300));
    const task = await rt.tasks.get(ORG, taskId);
    expect(task.status).toBe("running");
    expect(task.steps[0]).toMatchObject({ status: "dispatched", attempts: 1, output: null });
    expect((await listAudit(rt.pool, ORG, { taskId })).map((a) => a.action)).toEqual(["dispatch"]);
    expect(await listAudit(rt.pool, "globex")).toEqual([]);
    // The genuine result still completes it, exactly once even when delivered twice.
    const genuine = result({ taskId });
    await publishSigned(rt, "role:slowpoke", [genuine, genuine]);
    await waitForTask(rt.tasks, ORG, taskId, { until: (t) => t.status === "completed" });
    await new Promise((r) => setTimeout(r, 300));
    expect((await listAudit(rt.pool, ORG, { taskId })).map((a) => a.action)).toEqual(["dispatch", "result"]);
  });

  it("refuses an oversize task input with a clear error and creates nothing", async () => {
    const big = { text: "x".repeat(rt.config.bus.maxPayloadBytes) };
    await expect(rt.tasks.start({ orgId: ORG, workflow: "one", input: big })).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    const { rows } = await rt.pool.query("SELECT count(*)::int AS n FROM tasks");
    expect(rows[0].n).toBe(0);
  });

  it("refuses a task input nested past 64 levels (even 100,000) with a clear error and creates nothing", async () => {
    for (const depth of [65, 100_000]) {
      let input: unknown = 1;
      for (let i = 0; i < depth; i++) input = { d: input };
      await expect(rt.tasks.start({ orgId: ORG, workflow: "one", input })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: "task input nests deeper than 64 levels" });
    }
    const { rows } = await rt.pool.query("SELECT count(*)::int AS n FROM tasks");
    expect(rows[0].n).toBe(0);
  });
});
