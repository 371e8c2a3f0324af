/**
 * `switchyard foreign register --send FIELD…`: the field list round-trips through the registry and `foreign list`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCliEnvironment, type CliEnvironment } from "../../cli/helpers.js";

describe("switchyard foreign register --send", () => {
  let env: CliEnvironment;
  beforeAll(async () => {
    env = await createCliEnvironment();
  });
  afterAll(async () => {
    await env.cleanup();
  });

  it("stores the listed fields, lists them, and sends everything when none are listed", async () => {
    const registered = await env.run(["foreign", "register", "weather", "--tenant", "acme", "--url", "https://weather.example.com/a2a", "--send", "city", "--send", "task.zip", "--cost-per-second", "0.25", "--json"]);
    expect(registered.code).toBe(0);
    expect(JSON.parse(registered.last)).toMatchObject({ agentKey: "weather", sendFields: ["city", "task.zip"], costPerSecond: 0.25 });
    const open = await env.run(["foreign", "register", "open", "--tenant", "acme", "--url", "https://open.example.com/a2a", "--json"]);
    expect(JSON.parse(open.last)).toMatchObject({ agentKey: "open", sendFields: null });

    const listed = JSON.parse((await env.run(["foreign", "list", "--tenant", "acme", "--json"])).last) as { agents: Array<{ agentKey: string; sendFields: string[] | null }> };
    expect(Object.fromEntries(listed.agents.map((a) => [a.agentKey, a.sendFields]))).toEqual({ weather: ["city", "task.zip"], open: null });

    const dup = await env.run(["foreign", "register", "dup", "--tenant", "acme", "--url", "https://dup.example.com", "--send", "city", "--send", "city"]);
    expect(dup.code).toBe(2);
    expect(dup.stderr).toMatch(/send_fields/);
  });
});
