/**
 * `switchyard task reply` in direct mode against a real database and bus: the outcome is printed (JSON or a
 * line), refusals exit 1, and `task get --json` lists the reply under the task with its address.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ONE_STEP_WORKFLOW, createCliEnvironment, type CliEnvironment } from "./helpers.js";

let cli: CliEnvironment;
const REPLY_ON = { SWITCHYARD_REPLY_ENABLED: "true", SWITCHYARD_REPLY_TENANTS: "*" };

beforeAll(async () => {
  cli = await createCliEnvironment();
  const oneStep = await cli.file("one.yaml", ONE_STEP_WORKFLOW);
  expect((await cli.run(["workflow", "submit", oneStep, "--tenant", "acme"])).code).toBe(0);
});
afterAll(async () => {
  await cli?.cleanup();
});

describe("task reply", () => {
  it("refuses a task with no reply address (exit 1), and task get lists the refused reply", async () => {
    const id = (await cli.run(["task", "start", "one-step", "--tenant", "acme"])).last;
    const json = await cli.run(["task", "reply", id, "--tenant", "acme", "--text", "all done", "--json"], { env: REPLY_ON });
    expect(json.code).toBe(1);
    const outcome = JSON.parse(json.last);
    expect(outcome).toMatchObject({ status: "refused", code: "no_reply_address" });

    const human = await cli.run(["task", "reply", id, "--tenant", "acme", "--text", "all done", "--idempotency-key", "k2"], { env: REPLY_ON });
    expect(human.code).toBe(1);
    expect(human.last).toMatch(/^reply [0-9a-f-]{36}: refused — no_reply_address: /);

    const view = JSON.parse((await cli.run(["task", "get", id, "--tenant", "acme", "--json"])).last);
    expect(view.replyTo).toBeNull();
    expect(view.replies.map((r: { id: string; state: string; code: string; actor: string }) => [r.state, r.code, r.actor])).toEqual([
      ["refused", "no_reply_address", "cli"],
      ["refused", "no_reply_address", "cli"],
    ]);
    expect(view.replies[0].id).toBe(outcome.replyId);
    expect(JSON.stringify(view)).not.toContain("all done");
  });

  it("with REPLY_ENABLED off (the default) refuses as reply_disabled", async () => {
    const id = (await cli.run(["task", "start", "one-step", "--tenant", "acme"])).last;
    const json = await cli.run(["task", "reply", id, "--tenant", "acme", "--text", "hi", "--json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.last)).toMatchObject({ status: "refused", code: "reply_disabled" });
  });
});
