/**
 * TaskService.Reply and the Task message's replyTo / replies through a real gateway (Connect binary and plain
 * JSON): the actor is the API key's identity, another tenant's task is NOT_FOUND, and nothing returns the text.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TaskService } from "../../src/gen/switchyard/api/v1/tasks_pb.js";
import { createGatewayFixture, postJson, type GatewayFixture } from "../gateway/fixture.js";
import { addConnection, replyRows, setupTenant, SLACK, startTask } from "./support.js";

describe("TaskService.Reply through the gateway", () => {
  let fx: GatewayFixture;
  let acmeKey: string;
  let globexKey: string;
  beforeAll(async () => {
    fx = await createGatewayFixture({}, { flags: { replyEnabled: true, replyTenants: "*" } });
    acmeKey = await fx.tenant("acme");
    globexKey = await fx.tenant("globex");
    await setupTenant(fx.rt, "acme");
    await addConnection(fx.rt, "acme", { kind: "github", accountKey: "github.com" });
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it("answers with the outcome, records the key's identity as the actor, and Get lists the reply without its text", async () => {
    const tasks = fx.client(TaskService, acmeKey);
    // A Slack address while Acme has only a GitHub connection: refused before any dial.
    const taskId = await startTask(fx.rt, "acme", SLACK);
    const res = await tasks.reply({ taskId, text: "posted from the API" });
    expect(res).toMatchObject({ status: "refused", code: "no_connection", approvalId: "", permalink: "" });
    const rows = await replyRows(fx.rt, taskId);
    expect(rows.map((r) => r.id)).toEqual([res.replyId]);
    expect(rows[0]!.actor).toBe("apikey:default"); // the key's identity, not anything the caller says

    const got = await tasks.get({ id: taskId });
    expect(got.task?.replyTo).toMatchObject({ kind: "slack_thread", display: "slack T0ACME C0GENERAL thread 1700000000.000100" });
    expect(got.task?.replies.map((r) => [r.id, r.state, r.code])).toEqual([[res.replyId, "refused", "no_connection"]]);

    const raw = await postJson(fx.url, "switchyard.api.v1.TaskService/Get", { id: taskId }, acmeKey);
    expect(raw.status).toBe(200);
    expect(raw.body.task.replies[0]).toMatchObject({ state: "refused", code: "no_connection" });
    expect(JSON.stringify(raw.body)).not.toContain("posted from the API");
  });

  it("NOT_FOUND for another tenant's task, and nothing is recorded", async () => {
    const taskId = await startTask(fx.rt, "acme", SLACK);
    const error = await fx.client(TaskService, globexKey).reply({ taskId, text: "not mine" }).catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.NotFound);
    expect(await replyRows(fx.rt, taskId)).toEqual([]);
  });
});
