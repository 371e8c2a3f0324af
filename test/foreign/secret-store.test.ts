/**
 * A registered credential_ref is resolved through the secret store at call time and sent as a Bearer token;
 * an unresolvable one fails closed without any request, and no message ever carries the secret.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultConfig, loadConfig } from "../../src/config/index.js";
import { AgentChannels } from "../../src/foreign/agent-channels.js";
import { foreignAgentProblems } from "../../src/foreign/registry.js";
import { createEnvSecretStore, secretEnvName } from "../../src/foreign/secret-store.js";
import { ORG_ID_PATTERN } from "../../src/tenancy/tenants.js";

describe("secret store", () => {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  let base: string;
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("reads SWITCHYARD_SECRET_* into the config, and resolves env:NAME references", () => {
    const config = loadConfig({ SWITCHYARD_SECRET_ACME__TOKEN: "s3cret", SWITCHYARD_SECRET_GLOBEX_DINC__TOKEN: "g", OTHER: "x" });
    expect(config.foreign.secrets).toEqual({ ACME__TOKEN: "s3cret", GLOBEX_DINC__TOKEN: "g" });
    const store = createEnvSecretStore(config.foreign.secrets);
    expect(store.resolve("acme", "env:TOKEN")).toBe("s3cret");
    expect(store.resolve("globex-inc", "env:TOKEN")).toBe("g");
    // A tenant names only its own secrets: the same reference resolves per tenant, or not at all.
    expect(() => store.resolve("initech", "env:TOKEN")).toThrow(/set SWITCHYARD_SECRET_INITECH__TOKEN$/);
    expect(() => store.resolve("acme", "env:MISSING")).toThrow(/set SWITCHYARD_SECRET_ACME__MISSING$/);
    // NAME is taken as written: variables are case-sensitive, so env:token is not env:TOKEN.
    expect(() => store.resolve("acme", "env:token")).toThrow(/set SWITCHYARD_SECRET_ACME__token$/);
    expect(() => store.resolve("acme", "vault:x")).toThrow(/no secret store/);
    expect(() => store.resolve("acme", "env:a.b")).toThrow(/NAME must be 1 to 128 letters, digits or _/);
  });

  it("keeps tenants that differ only in - and _ apart (acme-corp / acme_corp)", () => {
    const store = createEnvSecretStore({ [secretEnvName("acme-corp", "TOKEN")]: "dash-secret" });
    expect(secretEnvName("acme-corp", "TOKEN")).toBe("ACME_DCORP__TOKEN");
    expect(secretEnvName("acme_corp", "TOKEN")).toBe("ACME_UCORP__TOKEN");
    expect(store.resolve("acme-corp", "env:TOKEN")).toBe("dash-secret");
    let error: unknown;
    try {
      store.resolve("acme_corp", "env:TOKEN");
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "FAILED_PRECONDITION", details: { reason: "CREDENTIAL_UNRESOLVED", variable: "SWITCHYARD_SECRET_ACME_UCORP__TOKEN" } });
    expect((error as Error).message).not.toContain("dash-secret");
  });

  it("never lets a NAME with __ reach another tenant's variables (t + env:X__TOK vs t__x + env:TOK)", () => {
    const store = createEnvSecretStore({ [secretEnvName("t__x", "TOK")]: "t__x-secret" });
    expect(secretEnvName("t__x", "TOK")).toBe("T_U_UX__TOK");
    expect(secretEnvName("t", "X__TOK")).toBe("T__X__TOK");
    expect(() => store.resolve("t", "env:X__TOK")).toThrow(/set SWITCHYARD_SECRET_T__X__TOK$/);
    expect(store.resolve("t__x", "env:TOK")).toBe("t__x-secret");
  });

  it("maps distinct (tenant, NAME) pairs to distinct variables (property)", () => {
    const tenant = fc.stringMatching(ORG_ID_PATTERN);
    const name = fc.string({ unit: fc.constantFrom("A", "a", "B", "_", "0", "X"), minLength: 1, maxLength: 8 });
    // Small alphabets make near-misses (a-b / a_b / a__b, X__ / x__) frequent.
    const smallTenant = fc.string({ unit: fc.constantFrom("a", "b", "_", "-", "0", "x", "u", "d"), minLength: 1, maxLength: 8 }).filter((t) => ORG_ID_PATTERN.test(t));
    const pair = fc.tuple(fc.oneof(smallTenant, tenant), name);
    fc.assert(
      fc.property(pair, pair, ([t1, n1], [t2, n2]) => {
        if (t1 === t2 && n1 === n2) return;
        expect(secretEnvName(t1, n1)).not.toBe(secretEnvName(t2, n2));
      }),
      { numRuns: 20_000 },
    );
    // And the variable decodes back to its pair: the tenant part ends at the first "__".
    fc.assert(
      fc.property(pair, ([t, n]) => {
        const key = secretEnvName(t, n);
        const cut = key.indexOf("__");
        expect(key.slice(cut + 2)).toBe(n);
        expect(key.slice(0, cut).replace(/_D/g, "-").replace(/_U/g, "_").toLowerCase()).toBe(t);
      }),
      { numRuns: 5_000 },
    );
  });

  it("refuses at registration an env: reference that can name no variable", () => {
    const agent = { agentKey: "a", baseUrl: "https://a.example.com", allowHost: "a.example.com" };
    expect(foreignAgentProblems({ ...agent, credentialRef: "env:WEATHER_TOKEN" })).toEqual([]);
    expect(foreignAgentProblems({ ...agent, credentialRef: "env:weather.token" })).toEqual([
      { path: "credential_ref", reason: expect.stringMatching(/NAME must be 1 to 128 letters, digits or _/) },
    ]);
  });

  it("sends the credential as a Bearer token through the guarded channel", async () => {
    const channels = new AgentChannels({ foreign: { ...defaultConfig.foreign, allowedNetworks: ["127.0.0.0/8"], secrets: { ACME__TOKEN: "s3cret" } } });
    const channel = channels.get({ orgId: "acme", agentKey: "a", allowHost: "127.0.0.1", credentialRef: "env:TOKEN" });
    const response = await channel.fetch(`${base}/ping`);
    expect(response.status).toBe(200);
    expect(seen.at(-1)?.authorization).toBe("Bearer s3cret");
    const plain = channels.get({ orgId: "acme", agentKey: "b", allowHost: "127.0.0.1", credentialRef: null });
    await plain.fetch(`${base}/ping`);
    expect(seen.at(-1)?.authorization).toBeUndefined();
  });

  it("fails closed, naming the reference but not a value, when the credential is missing", () => {
    const channels = new AgentChannels({ foreign: { ...defaultConfig.foreign, allowedNetworks: ["127.0.0.0/8"], secrets: { OTHER: "hidden" } } });
    const before = seen.length;
    let message = "";
    try {
      channels.get({ orgId: "acme", agentKey: "a", allowHost: "127.0.0.1", credentialRef: "env:ACME_TOKEN" });
    } catch (error) {
      message = (error as Error).message;
      expect(error).toMatchObject({ code: "FAILED_PRECONDITION", details: { reason: "CREDENTIAL_UNRESOLVED" } });
    }
    expect(message).toContain("env:ACME_TOKEN");
    expect(message).not.toContain("hidden");
    expect(seen.length).toBe(before);
  });
});
