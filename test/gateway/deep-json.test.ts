/**
 * Whatever is already stored must stay readable (issue 26 §4): a task whose input and step output nest 3,000 levels
 * (stored before the intake checks, or by a worker) is answered by TaskService.Get and Watch in both wire formats,
 * the too-deep part replaced by a marker, instead of a 500 from a recursion that overflowed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TaskService } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { fromValue } from "../../src/gateway/convert/values.js";
import { TOO_DEEP_MARKER } from "../../src/json-depth.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";

const deepJson = (depth: number) => `${'{"d":'.repeat(depth)}1${"}".repeat(depth)}`;

describe("deep stored JSON on the read paths", () => {
  let fx: GatewayFixture;
  let key: string;
  let taskId: string;

  beforeAll(async () => {
    fx = await createGatewayFixture();
    key = await fx.tenant("acme");
    await fx.submit("acme", `name: w\nsteps:\n  - { id: a, to: "role:writer" }\n`);
    taskId = (await fx.rt.tasks.start({ orgId: "acme", workflow: "w", input: { small: true } })).taskId;
    await fx.rt.pool.query("UPDATE tasks SET input = $2::jsonb WHERE id = $1", [taskId, deepJson(3_000)]);
    await fx.rt.pool.query("UPDATE steps SET output = $2::jsonb WHERE task_id = $1", [taskId, deepJson(3_000)]);
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  for (const json of [false, true]) {
    it(`Get answers with the too-deep part marked (${json ? "JSON" : "binary"})`, async () => {
      const tasks = fx.client(TaskService, key, { json });
      const got = await tasks.get({ id: taskId });
      let input = fromValue(got.task!.input) as Record<string, unknown>;
      let levels = 0;
      while (typeof input === "object" && input !== null && "d" in input) {
        input = input.d as Record<string, unknown>;
        levels++;
      }
      expect(input).toBe(TOO_DEEP_MARKER);
      expect(levels).toBeGreaterThan(10);
      expect(levels).toBeLessThan(3_000);
      expect(JSON.stringify(fromValue(got.task!.steps[0]!.output))).toContain(TOO_DEEP_MARKER);
    });
  }

  it("Watch sends the task's first view", async () => {
    const tasks = fx.client(TaskService, key);
    const abort = new AbortController();
    for await (const event of tasks.watch({ id: taskId }, { signal: abort.signal })) {
      expect(JSON.stringify(fromValue(event.task!.input))).toContain(TOO_DEEP_MARKER);
      abort.abort();
      break;
    }
  });
});
