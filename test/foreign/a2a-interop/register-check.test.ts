/**
 * `foreign register` checks the agent's card before storing it (issue 10 §1, "card lists security requirements,
 * registered without a credential"): CLI and API refuse a secured card without a credential
 * (FAILED_PRECONDITION, CARD_SECURITY_UNSATISFIED, naming the schemes) and accept it with one; a card that cannot
 * be met otherwise (missing skill, push asked of a card without push, no usable dialect, mTLS only) is refused too;
 * a card that cannot be fetched registers with a warning. The agents are real SDK agents on loopback.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ForeignAgentService } from "../../../src/gen/switchyard/api/v1/foreign_pb.js";
import { secretEnvName, SECRET_ENV_PREFIX } from "../../../src/foreign/secret-store.js";
import { startA2AAgent, type RunningA2AAgent, type StartA2AAgentOptions } from "../../support/a2a-agents.js";
import { createCliEnvironment, type CliEnvironment } from "../../cli/helpers.js";
import { createGatewayFixture, type GatewayFixture } from "../../gateway/fixture.js";
import { deadUrl } from "../a2a/http-fixtures.js";

const BEARER = { schemes: { bearer: "bearer" as const }, require: [["bearer"]] };
const agents: RunningA2AAgent[] = [];
async function agent(options: Partial<StartA2AAgentOptions> = {}): Promise<RunningA2AAgent> {
  const a = await startA2AAgent({ dialect: "1.0", ...options });
  agents.push(a);
  return a;
}
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

describe("switchyard foreign register checks the card", () => {
  let env: CliEnvironment;
  const LOOPBACK = { SWITCHYARD_EGRESS_ALLOWED_NETWORKS: "127.0.0.0/8", [`${SECRET_ENV_PREFIX}${secretEnvName("acme", "AGENT_TOKEN")}`]: "s3cret-token-value" };
  beforeAll(async () => {
    env = await createCliEnvironment();
  });
  afterAll(async () => {
    await env.cleanup();
  });

  const register = (key: string, url: string, ...extra: string[]) => env.run(["foreign", "register", key, "--tenant", "acme", "--url", url, "--json", ...extra], { env: LOOPBACK });
  const listed = async () => (JSON.parse((await env.run(["foreign", "list", "--tenant", "acme", "--json"])).last) as { agents: Array<{ agentKey: string }> }).agents.map((a) => a.agentKey);

  it.each(["1.0", "0.3"] as const)("refuses a v%s card requiring bearer auth without --credential-ref, naming the scheme; nothing is stored", async (dialect) => {
    const secured = await agent({ dialect, security: BEARER });
    const run = await register(`secured-${dialect.replace(".", "")}`, secured.baseUrl, "--skill", "echo");
    expect(run.code).not.toBe(0);
    const out = run.stdout + run.stderr;
    expect(out).toContain("CARD_SECURITY_UNSATISFIED");
    expect(out).toMatch(/requires security \(bearer \(http\)\)/);
    expect(out).toMatch(/--credential-ref/);
    expect(secured.cardRequests()).toBeGreaterThan(0);
    expect(await listed()).not.toContain(`secured-${dialect.replace(".", "")}`);
  });

  it("accepts the same card with a credential, and says what it checked", async () => {
    const secured = await agent({ security: BEARER, name: "secured-agent" });
    const run = await register("secured-ok", secured.baseUrl, "--credential-ref", "env:AGENT_TOKEN");
    expect(run.code).toBe(0);
    expect(JSON.parse(run.last)).toMatchObject({ agentKey: "secured-ok", credentialRef: "env:AGENT_TOKEN" });
    expect(run.stderr).toMatch(/checked foreign:secured-ok: secured-agent \(A2A 1\.0\), results by push/);
    expect(await listed()).toContain("secured-ok");
  });

  it("refuses an mTLS-only card even with a credential", async () => {
    const mtls = await agent({ security: { schemes: { cert: "mtls" }, require: [["cert"]] } });
    const run = await register("mtls", mtls.baseUrl, "--credential-ref", "env:AGENT_TOKEN");
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/mutual TLS/);
  });

  it("refuses a missing skill, push asked of a card without push, and a dialect the card does not speak", async () => {
    const plain = await agent({ push: false, skills: ["echo"] });
    const cases: Array<[string[], string]> = [
      [["--skill", "translate"], "CARD_MISSING_SKILL"],
      [["--delivery", "push"], "CARD_NO_PUSH"],
      [["--protocol", "0.3"], "CARD_NO_PROTOCOL"],
    ];
    for (const [extra, reason] of cases) {
      const run = await register("plain", plain.baseUrl, ...extra);
      expect(run.code, reason).not.toBe(0);
      expect(run.stdout + run.stderr).toContain(reason);
    }
    // Without push, auto delivery is accepted and polled (a note, not a refusal).
    const ok = await register("plain", plain.baseUrl);
    expect(ok.code).toBe(0);
    expect(ok.stderr).toMatch(/warning: foreign:plain: the Agent Card offers no push notifications: results are polled/);
  });

  it("registers an agent whose card cannot be fetched (not deployed yet), with a warning", async () => {
    const url = await deadUrl();
    const run = await register("later", url);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/warning: foreign:later: the agent's card could not be fetched, so nothing was checked/);
    expect(await listed()).toContain("later");
  });
});

describe("ForeignAgentService.Register checks the card", () => {
  let fx: GatewayFixture;
  let key: string;
  beforeAll(async () => {
    fx = await createGatewayFixture(
      {},
      {
        configure: (config) => ({
          ...config,
          foreign: { ...config.foreign, allowedNetworks: ["127.0.0.0/8"], secrets: { [secretEnvName("acme", "AGENT_TOKEN")]: "s3cret-token-value" } },
        }),
      },
    );
    key = await fx.tenant("acme");
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  const input = (agentKey: string, baseUrl: string, extra: Record<string, unknown> = {}) => ({
    agent: { agentKey, baseUrl, allowHost: new URL(baseUrl).host, skills: ["echo"], ...extra },
  });

  it("refuses a secured card without credential_ref (FAILED_PRECONDITION naming the scheme) and accepts it with one", async () => {
    const secured = await agent({ security: { schemes: { key: "apiKey" }, require: [["key"]] } });
    const client = fx.client(ForeignAgentService, key);
    const error = await client.register(input("api-secured", secured.baseUrl)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((error as ConnectError).rawMessage).toMatch(/requires security \(key \(apiKey\)\)/);
    expect((await client.list({})).agents.map((a) => a.agentKey)).not.toContain("api-secured");

    const ok = await client.register(input("api-secured", secured.baseUrl, { credentialRef: "env:AGENT_TOKEN" }));
    expect(ok.agent?.agentKey).toBe("api-secured");
    expect(ok.warnings).toEqual([]);
  });

  it("returns a warning, not an error, when the card cannot be fetched", async () => {
    const url = await deadUrl();
    const ok = await fx.client(ForeignAgentService, key).register(input("api-later", url));
    expect(ok.agent?.agentKey).toBe("api-later");
    expect(ok.warnings).toEqual([expect.stringMatching(/card could not be fetched/)]);
  });
});
