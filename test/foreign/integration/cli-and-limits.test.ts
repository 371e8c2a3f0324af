/**
 * `switchyard foreign register|list|disable`, and the callback route's per-tenant rate limit.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenBuckets } from "../../../src/foreign/rate-limit.js";
import { createCliEnvironment, type CliEnvironment } from "../../cli/helpers.js";

describe("switchyard foreign", () => {
  let env: CliEnvironment;
  beforeAll(async () => {
    env = await createCliEnvironment();
  });
  afterAll(async () => {
    await env.cleanup();
  });

  it("registers, lists and disables agents; refuses a secret as credential reference", async () => {
    const registered = await env.run(["foreign", "register", "weather", "--tenant", "acme", "--url", "https://weather.example.com:8443/a2a", "--skill", "forecast", "--skill", "alerts", "--clearance", "2", "--protocol", "0.3", "--cost", "0.5", "--credential-ref", "env:WEATHER_TOKEN", "--json"]);
    expect(registered.code).toBe(0);
    expect(JSON.parse(registered.last)).toMatchObject({
      agentKey: "weather", baseUrl: "https://weather.example.com:8443/a2a", allowHost: "weather.example.com:8443", skills: ["forecast", "alerts"],
      clearanceCeiling: 2, protocol: "0.3", costEstimate: 0.5, credentialRef: "env:WEATHER_TOKEN", enabled: true,
    });
    const listed = await env.run(["foreign", "list", "--tenant", "acme", "--json"]);
    expect(JSON.parse(listed.last).agents.map((a: { agentKey: string }) => a.agentKey)).toEqual(["weather"]);
    expect((await env.run(["foreign", "list", "--tenant", "other", "--json"])).last).toBe('{"agents":[]}');
    const text = await env.run(["foreign", "list", "--tenant", "acme"]);
    expect(text.stdout).toMatch(/weather\s+https:\/\/weather\.example\.com:8443\/a2a/);

    const disabled = await env.run(["foreign", "disable", "weather", "--tenant", "acme", "--json"]);
    expect(JSON.parse(disabled.last)).toMatchObject({ agentKey: "weather", enabled: false });
    const secret = await env.run(["foreign", "register", "leaky", "--tenant", "acme", "--url", "https://x.example.com", "--credential-ref", "sk-abcdefabcdefabcdef1234567890"]);
    expect(secret.code).toBe(2);
    expect(secret.stderr).toMatch(/credential_ref/);
    expect((await env.run(["foreign", "disable", "ghost", "--tenant", "acme"])).code).toBe(1);
    expect((await env.run(["foreign", "register", "dup", "--tenant", "acme", "--url", "https://x.example.com", "--protocol", "2.0"])).code).toBe(2);
  });
});

describe("callback rate limit", () => {
  it("admits a burst per tenant, refuses beyond it, refills with time, and keeps tenants apart", () => {
    let now = 0;
    const buckets = new TokenBuckets({ ratePerSec: 3, clock: () => now });
    expect([1, 2, 3, 4].map(() => buckets.take("acme"))).toEqual([true, true, true, false]);
    expect(buckets.take("globex")).toBe(true);
    now += 400;
    expect(buckets.take("acme")).toBe(true);
    expect(buckets.take("acme")).toBe(false);
  });
});
