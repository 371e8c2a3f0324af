/**
 * switchyard/client: typed clients against a real gateway, authenticated with a tenant's API key.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createSwitchyardClient, fromValue, TaskStatus, toValue } from "../../src/sdk/client.js";
import { createGatewayFixture, type GatewayFixture } from "../gateway/fixture.js";

describe("createSwitchyardClient", () => {
  let fx: GatewayFixture;
  let token: string;
  beforeAll(async () => {
    fx = await createGatewayFixture();
    token = await fx.tenant("acme");
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  it("submits a workflow, starts a task and reads it back with one typed client", async () => {
    const sy = createSwitchyardClient({ url: fx.url, token });
    const submitted = await sy.workflows.submit({ source: "name: hello\nsteps:\n  - { id: a, to: role:echo }\n" });
    expect(submitted.ref).toBe("hello@1");
    const started = await sy.tasks.start({ workflow: "hello", input: toValue({ n: 1 }) });
    expect(started.task?.status).toBe(TaskStatus.RUNNING);
    const got = await sy.tasks.get({ id: started.task!.id });
    expect([got.task?.workflow, fromValue(got.task?.input)]).toEqual(["hello@1", { n: 1 }]);
  });

  it("surfaces the gateway's refusal of a bad key as a ConnectError", async () => {
    const sy = createSwitchyardClient({ url: fx.url, token: "sy_not_a_key" });
    const error = await sy.tasks.list({}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Unauthenticated);
  });

  it("refuses options it cannot use, naming them", () => {
    expect(() => createSwitchyardClient({ url: "127.0.0.1:8080", token })).toThrow(/url must be the gateway's http\(s\) base URL/);
    expect(() => createSwitchyardClient({ url: fx.url, token: "" })).toThrow(/token .* is required/);
  });
});
