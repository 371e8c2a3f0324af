/**
 * The foreign-agent registry: validation (URL scheme, allowlist entry, skills, clearance, protocol, a credential
 * NAME and never a secret), CRUD, and tenant isolation under row-level security.
 */
import { createPostgresStores } from "../../src/store/postgres-stores.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  disableForeignAgent,
  findForeignAgent,
  foreignAgentProblems,
  getForeignAgent,
  hostAllowed,
  listForeignAgents,
  looksLikeSecret,
  registerForeignAgent,
  updateForeignAgent,
  type ForeignAgentInput,
} from "../../src/foreign/registry.js";
import { withTenantTransaction } from "../../src/store/tenant-scope.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

const stores = createPostgresStores();

const VALID: ForeignAgentInput = { agentKey: "summarizer", baseUrl: "https://agents.example.com/a2a", allowHost: "agents.example.com", skills: ["summarize"] };

function paths(input: Partial<ForeignAgentInput>): string[] {
  return foreignAgentProblems({ ...VALID, ...input }).map((p) => p.path);
}

describe("foreign agent validation", () => {
  it("accepts a complete agent", () => {
    expect(foreignAgentProblems(VALID)).toEqual([]);
    expect(foreignAgentProblems({ ...VALID, baseUrl: "http://10.0.0.5:9000/", allowHost: "10.0.0.5:9000", protocol: "0.3", credentialRef: "vault:a2a/summarizer" })).toEqual([]);
  });

  it("names each bad field", () => {
    expect(paths({ baseUrl: "ftp://agents.example.com" })).toEqual(["base_url"]);
    expect(paths({ baseUrl: "not a url" })).toEqual(["base_url"]);
    expect(paths({ baseUrl: "https://user:pw@agents.example.com" })).toEqual(["base_url"]);
    expect(paths({ allowHost: "" })).toEqual(["allow_host"]);
    expect(paths({ allowHost: "Agents.Example.com" })).toEqual(["allow_host"]);
    expect(paths({ allowHost: "other.example.com" })).toEqual(["base_url"]);
    expect(paths({ agentKey: "bad key" })).toEqual(["agent_key"]);
    expect(paths({ skills: ["a", "a", ""] })).toEqual(["skills[1]", "skills[2]"]);
    expect(paths({ clearanceCeiling: -1 })).toEqual(["clearance_ceiling"]);
    expect(paths({ clearanceCeiling: 1.5 })).toEqual(["clearance_ceiling"]);
    expect(paths({ costEstimate: -0.1 })).toEqual(["cost_estimate"]);
    expect(paths({ protocol: "2.0" as never })).toEqual(["protocol"]);
  });

  it("takes a credential NAME, never a secret", () => {
    expect(paths({ credentialRef: "env:SUMMARIZER_TOKEN" })).toEqual([]);
    for (const secret of ["sk-live-4f9a8b7c6d5e4f3a2b1c0d9e", "ghp_0123456789abcdefABCDEF0123456789abcd", "Bearer abc", "env:a8F3kL9qZ2xW7vB4nM6pR1tY5uI0oPq", "has space"]) {
      expect(paths({ credentialRef: secret }), secret).toEqual(["credential_ref"]);
    }
    expect(looksLikeSecret("vault:team-a/agents/summarizer")).toBe(false);
  });

  it("matches hosts against allow_host entries exactly, by wildcard and by port", () => {
    expect(hostAllowed("agents.example.com", "agents.example.com")).toBe(true);
    expect(hostAllowed("a.agents.example.com", "*.example.com")).toBe(true);
    expect(hostAllowed("example.com", "*.example.com")).toBe(false);
    expect(hostAllowed("evilexample.com", "*.example.com")).toBe(false);
    expect(hostAllowed("agents.example.com:8443", "agents.example.com:8443")).toBe(true);
    expect(hostAllowed("agents.example.com:8443", "agents.example.com:9000")).toBe(false);
  });
});

describe("foreign agent registry", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it("registers, reads, updates, disables, and refuses a taken key", async () => {
    const agent = await registerForeignAgent(stores.foreignAgents, db.pool, "acme", { ...VALID, credentialRef: "env:TOKEN" });
    expect(agent).toMatchObject({ orgId: "acme", agentKey: "summarizer", protocol: "auto", enabled: true, clearanceCeiling: 0, costEstimate: 0, credentialRef: "env:TOKEN" });
    await expect(registerForeignAgent(stores.foreignAgents, db.pool, "acme", VALID)).rejects.toMatchObject({ code: "ALREADY_EXISTS" });
    await expect(registerForeignAgent(stores.foreignAgents, db.pool, "acme", { ...VALID, agentKey: "other", baseUrl: "gopher://x" })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      details: { path: "base_url" },
    });

    const updated = await updateForeignAgent(stores.foreignAgents, db.pool, "acme", "summarizer", { protocol: "1.0", clearanceCeiling: 3, credentialRef: null });
    expect(updated).toMatchObject({ protocol: "1.0", clearanceCeiling: 3, credentialRef: null, baseUrl: VALID.baseUrl });
    expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(agent.updatedAt.getTime());
    // The merged result is validated: moving the URL off the allowlisted host is refused.
    await expect(updateForeignAgent(stores.foreignAgents, db.pool, "acme", "summarizer", { baseUrl: "https://elsewhere.example.org" })).rejects.toMatchObject({ details: { path: "base_url" } });
    await expect(updateForeignAgent(stores.foreignAgents, db.pool, "acme", "ghost", { enabled: false })).rejects.toMatchObject({ code: "NOT_FOUND" });

    expect((await disableForeignAgent(stores.foreignAgents, db.pool, "acme", "summarizer")).enabled).toBe(false);
    expect((await getForeignAgent(stores.foreignAgents, db.pool, "acme", "summarizer")).enabled).toBe(false);
    expect((await updateForeignAgent(stores.foreignAgents, db.pool, "acme", "summarizer", { enabled: true })).enabled).toBe(true);
    expect((await listForeignAgents(stores.foreignAgents, db.pool, "acme")).map((a) => a.agentKey)).toEqual(["summarizer"]);
  });

  it("keeps tenants apart, also under row-level security", async () => {
    await registerForeignAgent(stores.foreignAgents, db.pool, "globex", { ...VALID, agentKey: "g-agent" });
    expect(await findForeignAgent(stores.foreignAgents, db.pool, "acme", "g-agent")).toBeUndefined();
    await expect(getForeignAgent(stores.foreignAgents, db.pool, "acme", "g-agent")).rejects.toMatchObject({ code: "NOT_FOUND" });
    const seen = await withTenantTransaction(db.pool, "acme", async (client) => (await client.query("SELECT org_id, agent_key FROM foreign_agents")).rows);
    expect(seen.map((r) => r.org_id)).not.toContain("globex");
    // Under acme's scope, even asking for globex's row by its own org id finds nothing, and writing it is refused.
    expect(await withTenantTransaction(db.pool, "acme", (client) => findForeignAgent(stores.foreignAgents, client, "globex", "g-agent"))).toBeUndefined();
    await expect(withTenantTransaction(db.pool, "acme", (client) => registerForeignAgent(stores.foreignAgents, client, "globex", { ...VALID, agentKey: "sneaky" }))).rejects.toThrow(/row-level security/);
  });
});
