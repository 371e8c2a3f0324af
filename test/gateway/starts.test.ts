/**
 * StartTask through the real gateway (issue 11 §2): concurrent starts of one tenant share transactions; each call
 * gets its own answer (a bad one fails alone); a start writes no audit row in the gateway, only the task, its
 * pending steps and a start envelope published to the tenant's shard inbox; the same idempotency key answers the
 * same task, read back.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { streamKey } from "../../src/bus/keys.js";
import { inboxOf } from "../../src/bus/shards.js";
import { recordShardCount } from "../../src/store/shards/postgres-shard-store.js";
import { ErrorCode } from "../../src/errors.js";
import { startGateway } from "../../src/gateway/server.js";
import { StepStatus, TaskService } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { toValue } from "../../src/gateway/convert/values.js";
import { waitForTasks } from "../support/wait.js";
import { Workers } from "../support/workers.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";

const FLOW = 'name: two\nsteps:\n  - { id: a, to: "role:echo" }\n  - { id: b, to: "role:echo", needs: [a] }\n';
const CALLS = 60;

describe("StartTask through the shard owner", () => {
  let fx: GatewayFixture;
  let key: string;
  beforeAll(async () => {
    fx = await createGatewayFixture({ collectMetrics: false });
    key = await fx.tenant("acme");
    await fx.submit("acme", FLOW);
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it("refuses to start with another shard count than the coordinators recorded (its starts would land in unread inboxes)", async () => {
    await recordShardCount(fx.rt.pool, fx.rt.config.shards.count);
    const halved = { ...fx.rt, config: { ...fx.rt.config, shards: { ...fx.rt.config.shards, count: fx.rt.config.shards.count / 2 } } };
    await expect(startGateway(halved, { port: 0, host: "127.0.0.1" })).rejects.toMatchObject({
      code: ErrorCode.Config,
      message: expect.stringMatching(/^SWITCHYARD_SHARD_COUNT is 32, but this database was set up with 64 shards/),
    });
  });

  it("groups concurrent starts, answers each with its own outcome, and leaves the dispatch to the owner", async () => {
    const tasks = fx.client(TaskService, key);
    const calls = Array.from({ length: CALLS }, (_, i) =>
      i === 7 ? tasks.start({ workflow: "missing" }) : i === 11 ? tasks.start({ workflow: "two", input: toValue({ big: "x".repeat(2 << 20) }) }) : tasks.start({ workflow: "two", input: toValue({ i }) }),
    );
    const outcomes = await Promise.allSettled(calls);
    const failed = outcomes.flatMap((o, i) => (o.status === "rejected" ? [[i, ConnectError.from(o.reason).code]] : []));
    expect(failed).toEqual([
      [7, Code.NotFound],
      [11, Code.ResourceExhausted],
    ]);
    const started = outcomes.flatMap((o) => (o.status === "fulfilled" ? [o.value] : []));
    expect(started.every((s) => s.created && s.task!.steps.map((step) => step.status).join() === [StepStatus.PENDING, StepStatus.PENDING].join())).toBe(true);

    const { rows } = await fx.rt.pool.query<{ created_at: Date }>("SELECT created_at FROM tasks WHERE org_id = 'acme'");
    expect(rows).toHaveLength(CALLS - 2);
    // Tasks of one transaction share its start time: fewer distinct times than starts means batches.
    expect(new Set(rows.map((r) => r.created_at.getTime())).size).toBeLessThan(CALLS - 2);
    // Nothing of the engine ran in the gateway: no audit row, no dispatched step.
    expect((await fx.rt.pool.query("SELECT count(*)::int AS n FROM audit_log")).rows[0].n).toBe(0);
    expect((await fx.rt.pool.query("SELECT count(*)::int AS n FROM steps WHERE status <> 'pending'")).rows[0].n).toBe(0);
    // Every start envelope was published to the tenant's inbox and left the outbox.
    expect(await fx.rt.redis.xlen(streamKey(fx.rt.prefix, inboxOf("acme", fx.rt.config.shards.count)))).toBe(CALLS - 2);
    expect((await fx.rt.pool.query("SELECT count(*)::int AS n FROM outbox")).rows[0].n).toBe(0);
  });

  it("answers the task an idempotency key names, read back, once per key however many calls race", async () => {
    const tasks = fx.client(TaskService, key);
    const answers = await Promise.all(Array.from({ length: 10 }, () => tasks.start({ workflow: "two", idempotencyKey: "same-key" })));
    expect(new Set(answers.map((a) => a.task!.id)).size).toBe(1);
    expect(answers.filter((a) => a.created)).toHaveLength(1);
    expect(answers.every((a) => a.task!.workflow === "two@1" && a.task!.steps.length === 2)).toBe(true);
  });

  it("the coordinator owning the shard runs every start to completion, with one dispatch row per step", async () => {
    // Runs last: the starts of the tests above (never dispatched) finish here too.
    fx.rt.startCoordinator();
    const workers = new Workers(fx.rt);
    workers.start("echo", async () => ({ ok: true }));
    try {
      const tasks = fx.client(TaskService, key);
      await Promise.all(Array.from({ length: 30 }, (_, i) => tasks.start({ workflow: "two", input: toValue({ late: i }) })));
      const state = await waitForTasks(fx.rt.pool, { orgId: "acme" });
      expect(Object.keys(state.tasks)).toEqual(["completed"]);
      const { rows } = await fx.rt.pool.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM audit_log WHERE org_id = 'acme' AND action = 'dispatch' GROUP BY task_id, step_id HAVING count(*) <> 1",
      );
      expect(rows).toEqual([]);
      expect((await fx.rt.pool.query("SELECT count(*)::int AS n FROM audit_log WHERE action = 'dispatch'")).rows[0].n).toBe(2 * state.tasks.completed!);
    } finally {
      await workers.stop();
    }
  });
});
