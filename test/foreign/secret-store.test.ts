/**
 * A registered credential_ref is resolved through the secret store at call time and sent as a Bearer token;
 * an unresolvable one fails closed without any request, and no message ever carries the secret.
 */
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultConfig, loadConfig } from "../../src/config.js";
import { AgentChannels } from "../../src/foreign/agent-channels.js";
import { createEnvSecretStore } from "../../src/foreign/secret-store.js";

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
    const config = loadConfig({ SWITCHYARD_SECRET_ACME__TOKEN: "s3cret", SWITCHYARD_SECRET_GLOBEX_INC__TOKEN: "g", OTHER: "x" });
    expect(config.foreign.secrets).toEqual({ ACME__TOKEN: "s3cret", GLOBEX_INC__TOKEN: "g" });
    const store = createEnvSecretStore(config.foreign.secrets);
    expect(store.resolve("acme", "env:token")).toBe("s3cret");
    expect(store.resolve("globex-inc", "env:TOKEN")).toBe("g");
    // A tenant names only its own secrets: the same reference resolves per tenant, or not at all.
    expect(() => store.resolve("initech", "env:TOKEN")).toThrow(/SWITCHYARD_SECRET_INITECH__TOKEN/);
    expect(() => store.resolve("acme", "env:MISSING")).toThrow(/SWITCHYARD_SECRET_ACME__MISSING/);
    expect(() => store.resolve("acme", "vault:x")).toThrow(/no secret store/);
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
