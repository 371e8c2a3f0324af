/**
 * What a waiting orchestrator awaits, as a tenant sees it: the task view's `steps[].awaiting` (from the step's
 * checkpoint), the API's `Step.awaiting` (binary and JSON), `task get --json` in direct and remote mode, and the
 * `task start --wait` line — while an orchestrator that fanned out to three delegates waits for two of them, while
 * an answer is queued behind a running turn (`arrived`), and after it completed (empty).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/main.js";
import { formatStepLine } from "../../src/cli/task-watch.js";
import type { TaskView } from "../../src/tasks/tasks.js";
import { taskFromProto } from "../../src/gateway/convert/tasks.js";
import { TaskService } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import type { Handler } from "../../src/harness/index.js";
import { FLAGS_ON_ENV, redisUrl } from "../support/env.js";
import { waitFor } from "../support/runtime.js";
import { waitForTask } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { Gates } from "../integration/fan-out-support.js";
import { createGatewayFixture, postJson, type GatewayFixture } from "./fixture.js";

const ORG = "acme";
const FLOW = `
name: fan
steps:
  - { id: orch, to: "role:orch" }
`;

describe("a waiting step's awaited replies", () => {
  let fx: GatewayFixture;
  let workers: Workers;
  let key: string;
  let dir: string;
  const gates = new Gates();

  /** `task get ID --json` through the CLI, direct (`--tenant`) or remote (through the gateway). */
  async function cliGet(taskId: string, mode: "direct" | "remote"): Promise<string> {
    let stdout = "";
    const code = await runCli(["task", "get", taskId, "--json", ...(mode === "direct" ? ["--tenant", ORG] : [])], {
      env: {
        ...FLAGS_ON_ENV,
        DATABASE_URL: fx.rt.db.url,
        REDIS_URL: redisUrl(),
        SWITCHYARD_KEY_PREFIX: fx.rt.prefix,
        SWITCHYARD_LOG_LEVEL: "warn",
        ...(mode === "remote" ? { SWITCHYARD_URL: fx.url, SWITCHYARD_TOKEN: key } : {}),
      },
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: () => {} },
      cwd: dir,
      handleSignals: false,
    });
    expect(code).toBe(0);
    return stdout;
  }

  const orchOf = (view: TaskView) => view.steps.find((s) => s.id === "orch")!;

  /** Waits until the orchestrator step has `status` and awaits exactly `awaiting`; returns the view. */
  async function until(taskId: string, status: string, awaiting: TaskView["steps"][number]["awaiting"]): Promise<TaskView> {
    return waitFor(
      async () => {
        const view = await fx.rt.tasks.get(ORG, taskId);
        const orch = orchOf(view);
        return orch.status === status && JSON.stringify(orch.awaiting) === JSON.stringify(awaiting) ? view : undefined;
      },
      { what: `orch ${status} awaiting ${JSON.stringify(awaiting)}` },
    );
  }

  /** The same view through every way a tenant reads it. */
  async function expectEverywhere(taskId: string, view: TaskView): Promise<void> {
    const got = await fx.client(TaskService, key).get({ id: taskId });
    expect(taskFromProto(got.task!)).toEqual(view);
    const raw = await postJson(fx.url, "switchyard.api.v1.TaskService/Get", { id: taskId }, key);
    expect(raw.status).toBe(200);
    const rawOrch = (raw.body.task.steps as Array<{ id: string; awaiting?: unknown }>).find((s) => s.id === "orch")!;
    // proto3 JSON: an empty list is left out; `arrived: false` is written out.
    expect(rawOrch.awaiting ?? []).toEqual(orchOf(view).awaiting);
    const direct = await cliGet(taskId, "direct");
    expect(JSON.parse(direct)).toEqual(view);
    expect(await cliGet(taskId, "remote")).toBe(direct);
  }

  beforeAll(async () => {
    fx = await createGatewayFixture({}, { coordinator: { defaultStepTimeoutMs: 60_000 } });
    key = await fx.tenant(ORG);
    dir = await mkdtemp(join(tmpdir(), "sy-awaiting-"));
    await fx.submit(ORG, FLOW);
    fx.rt.startCoordinator();
    workers = new Workers(fx.rt);
    const orchestrator: Handler = async (work, ctx) => {
      if (!work.resume) {
        return ctx.delegateAll(
          [
            { to: "role:analyst", correlationId: "analysis", payload: {} },
            { to: "role:critic", correlationId: "critique", payload: {} },
            { to: "role:checker", correlationId: "fact-check", payload: {} },
          ],
          { state: { seen: [] } },
        );
      }
      const { reply, outstanding } = work.resume;
      await gates.wait(`turn:${reply.correlationId}`);
      const seen = [...(work.resume.state as { seen: string[] }).seen, reply.correlationId];
      return outstanding.length > 0 ? ctx.awaitMore({ seen }) : { seen };
    };
    workers.start("orch", orchestrator);
    for (const [role, id] of [["analyst", "analysis"], ["critic", "critique"], ["checker", "fact-check"]] as const) {
      workers.start(role, async () => {
        await gates.wait(id);
        return { by: role };
      });
    }
  });
  afterAll(async () => {
    await workers.stop();
    await fx.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it("lists the sub-queries not yet handed over, with arrived ones flagged, and nothing once the step completed", async () => {
    const { taskId } = await fx.rt.tasks.start({ orgId: ORG, workflow: "fan" });
    const all = [
      { correlationId: "analysis", delegateStepId: "orch.d1", arrived: false },
      { correlationId: "critique", delegateStepId: "orch.d2", arrived: false },
      { correlationId: "fact-check", delegateStepId: "orch.d3", arrived: false },
    ];
    const first = await until(taskId, "waiting", all);
    expect(formatStepLine(orchOf(first))).toBe("step orch (role:orch): waiting, attempt 1 — waiting for 3 replies: analysis, critique, fact-check");

    // The analysis answer is handed over; its turn keeps waiting: 2 of 3 outstanding.
    gates.open("analysis");
    gates.open("turn:analysis");
    const twoLeft = await until(taskId, "waiting", all.slice(1));
    expect(formatStepLine(orchOf(twoLeft))).toBe("step orch (role:orch): waiting, attempt 1 — waiting for 2 replies: critique, fact-check");
    for (const s of twoLeft.steps) if (s.id !== "orch") expect(s.awaiting).toEqual([]);
    await expectEverywhere(taskId, twoLeft);

    // The critique turn is held; the fact-check answer arrives meanwhile and is queued behind it.
    gates.open("critique");
    await until(taskId, "dispatched", all.slice(2));
    gates.open("fact-check");
    const queued = await until(taskId, "dispatched", [{ correlationId: "fact-check", delegateStepId: "orch.d3", arrived: true }]);
    await expectEverywhere(taskId, queued);

    gates.open("turn:critique");
    gates.open("turn:fact-check");
    const done = await waitForTask(fx.rt.tasks, ORG, taskId);
    expect(done.status).toBe("completed");
    expect(orchOf(done).output).toEqual({ seen: ["analysis", "critique", "fact-check"] });
    expect(done.steps.map((s) => s.awaiting)).toEqual(done.steps.map(() => []));
    await expectEverywhere(taskId, done);
  });
});
