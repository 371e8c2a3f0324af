/**
 * TaskService.Watch streams the task each time a step changes, until the task finishes — with a real coordinator
 * and worker harness in this process.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApprovalService } from "../../src/gen/switchyard/api/v1/approvals_pb.js";
import { StepStatus, TaskService, TaskStatus, type Task } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../../src/gen/switchyard/api/v1/workflows_pb.js";
import { fromValue } from "../../src/gateway/convert/values.js";
import { Workers } from "../support/workers.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";

describe("TaskService.Watch", () => {
  let fx: GatewayFixture;
  let workers: Workers;
  let key: string;
  beforeEach(async () => {
    fx = await createGatewayFixture();
    key = await fx.tenant("acme");
    workers = new Workers(fx.rt);
  });
  afterEach(async () => {
    await workers.stop();
    await fx.cleanup();
  });

  it("streams every step change of a three-step task and ends when it completes", async () => {
    await fx.client(WorkflowService, key).submit({
      source: "name: three\nsteps:\n  - { id: one, to: 'role:echo' }\n  - { id: two, to: 'role:echo' }\n  - { id: three, to: 'role:echo' }\n",
    });
    fx.rt.startCoordinator();
    workers.start("echo", async (work) => {
      await new Promise((r) => setTimeout(r, 150));
      return { step: work.stepId };
    });
    const tasks = fx.client(TaskService, key);
    const { task } = await tasks.start({ workflow: "three" });
    const seen: Task[] = [];
    for await (const message of tasks.watch({ id: task!.id })) seen.push(message.task!);

    const last = seen.at(-1)!;
    expect(last.status).toBe(TaskStatus.COMPLETED);
    expect(last.steps.map((s) => [s.id, s.status])).toEqual([
      ["one", StepStatus.COMPLETED],
      ["two", StepStatus.COMPLETED],
      ["three", StepStatus.COMPLETED],
    ]);
    expect(fromValue(last.steps[2]!.output)).toEqual({ step: "three" });
    // Each step was seen running (dispatched) before it completed, and no two messages are the same state.
    for (const step of ["one", "two", "three"]) {
      const statuses = seen.map((t) => t.steps.find((s) => s.id === step)!.status);
      expect(statuses).toContain(StepStatus.DISPATCHED);
      expect(statuses.indexOf(StepStatus.DISPATCHED)).toBeLessThan(statuses.indexOf(StepStatus.COMPLETED));
    }
    const states = seen.map((t) => JSON.stringify([t.status, t.steps.map((s) => [s.status, s.attempts])]));
    expect(new Set(states).size).toBe(states.length);
    // A watch of a finished task yields it once and ends.
    const again: Task[] = [];
    for await (const message of tasks.watch({ id: task!.id })) again.push(message.task!);
    expect(again.map((t) => t.status)).toEqual([TaskStatus.COMPLETED]);
  });

  it("shows the parked approval and follows the task through the decision to its end", async () => {
    await fx.client(WorkflowService, key).submit({ source: "name: gated\nsteps:\n  - { id: publish, to: 'role:echo', approval: true }\n" });
    fx.rt.startCoordinator();
    workers.start("echo", async () => ({ published: true }));
    const tasks = fx.client(TaskService, key);
    const { task } = await tasks.start({ workflow: "gated" });
    const statuses: TaskStatus[] = [];
    for await (const message of tasks.watch({ id: task!.id })) {
      statuses.push(message.task!.status);
      const parked = message.task!.steps.find((s) => s.status === StepStatus.PARKED);
      if (parked?.approvalId) await fx.client(ApprovalService, key).decide({ id: parked.approvalId, approve: true, reason: "ok" });
    }
    // The start answers before the shard owner dispatches, so the watch may first see the task running.
    expect(statuses.filter((s) => s !== TaskStatus.RUNNING)[0]).toBe(TaskStatus.PARKED);
    expect(statuses.at(-1)).toBe(TaskStatus.COMPLETED);
  });

  it("ends open streams when the gateway shuts down, so shutdown does not wait for them", async () => {
    await fx.client(WorkflowService, key).submit({ source: "name: stuck\nsteps:\n  - { id: a, to: 'role:nobody' }\n" });
    const tasks = fx.client(TaskService, key);
    const { task } = await tasks.start({ workflow: "stuck" });
    const received: Task[] = [];
    const watching = (async () => {
      for await (const message of tasks.watch({ id: task!.id })) received.push(message.task!);
    })();
    while (received.length === 0) await new Promise((r) => setTimeout(r, 20));
    const started = Date.now();
    await fx.gateway.close();
    await watching;
    expect(Date.now() - started).toBeLessThan(1500);
    expect(received.at(-1)!.status).toBe(TaskStatus.RUNNING);
  });
});
