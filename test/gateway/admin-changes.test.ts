/**
 * AdminService's changes (SetFlag, SetDispatchLimit, ClearDispatchLimit) answer the audit row that records them, and
 * record who made them: through a gateway the admin key (`apikey:NAME`), in the CLI's direct mode (the same
 * handlers in-process, issue 27 §4) the operator's `--actor` as given — any text, as `flags set` always took it.
 * ForeignAgentService.Register answers what its check found.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService, FlagScopeKind } from "../../src/gen/switchyard/api/v1/admin_pb.js";
import { ForeignAgentService } from "../../src/gen/switchyard/api/v1/foreign_pb.js";
import type { Queryable } from "../../src/store/db.js";
import { startA2AAgent, type RunningA2AAgent } from "../support/a2a-agents.js";
import { createCliEnvironment, type CliEnvironment } from "../cli/helpers.js";
import { createGatewayFixture, type GatewayFixture } from "./fixture.js";

/** The chain's rows as recorded (seq, actor, verdict). */
async function chain(db: Queryable, orgId: string): Promise<Array<{ seq: number; actor: string; verdict: string }>> {
  const { rows } = await db.query<{ seq: string; actor: string; verdict: string }>("SELECT seq, actor, verdict FROM audit_log WHERE org_id = $1 ORDER BY seq", [orgId]);
  return rows.map((r) => ({ seq: Number(r.seq), actor: r.actor, verdict: r.verdict }));
}

describe("AdminService changes through a gateway", () => {
  let fx: GatewayFixture;
  let adminKey: string;
  beforeAll(async () => {
    fx = await createGatewayFixture();
    adminKey = await fx.adminKey();
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it("answers the audit row of a flag and a limit, recorded as the admin key", async () => {
    const admin = fx.client(AdminService, adminKey);
    const flag = await admin.setFlag({ name: "HARNESS_ENABLED", scopeKind: FlagScopeKind.ROLE, scope: "writer", enabled: false, reason: "draining" });
    expect(flag.audit).toMatchObject({ orgId: "_system", seq: 1n, action: "flag", actor: "apikey:sre", destination: "role:writer", verdict: "off", rule: "HARNESS_ENABLED" });

    const limit = await admin.setDispatchLimit({ limit: { orgId: "acme", destination: "role:writer", maxInFlight: 3, ratePerSec: 2.5 }, reason: "noisy" });
    expect(limit.limit).toMatchObject({ orgId: "acme", destination: "role:writer", maxInFlight: 3, ratePerSec: 2.5, updatedBy: "apikey:sre" });
    expect(limit.audit).toMatchObject({ orgId: "acme", seq: 1n, action: "limit", actor: "apikey:sre", destination: "tenant:acme/role:writer", verdict: "set", rule: "maxInFlight=3 ratePerSec=2.5" });

    expect((await admin.clearDispatchLimit({ orgId: "acme", destination: "role:writer", reason: "done" })).cleared).toBe(true);
    expect((await chain(fx.rt.pool, "acme"))[1]).toEqual({ seq: 2, actor: "apikey:sre", verdict: "cleared" });
  });

  it("Register answers the check of an agent it reached, and none for one it did not", async () => {
    const key = await fx.tenant("globex");
    const foreign = fx.client(ForeignAgentService, key);
    const agent: RunningA2AAgent = await startA2AAgent({ dialect: "1.0", name: "checked-agent" });
    try {
      // The gateway's egress guard refuses loopback: the card cannot be fetched, so nothing was checked.
      const unchecked = await foreign.register({ agent: { agentKey: "lab", baseUrl: agent.baseUrl, allowHost: new URL(agent.baseUrl).host } });
      expect(unchecked.check).toBeUndefined();
      expect(unchecked.warnings.join("\n")).toMatch(/could not be fetched/);
    } finally {
      await agent.close();
    }
  });
});

describe("AdminService changes in the CLI's direct mode", () => {
  let cli: CliEnvironment;
  let agent: RunningA2AAgent;
  beforeAll(async () => {
    cli = await createCliEnvironment();
    agent = await startA2AAgent({ dialect: "1.0", name: "checked-agent" });
  });
  afterAll(async () => {
    await agent?.close();
    await cli?.cleanup();
  });

  it("records --actor as given (any text: it travels percent-encoded), and refuses an empty one as the store does", async () => {
    const set = await cli.run(["flags", "set", "BUS_ROUTED", "on", "--team", "blue", "--reason", "pilot", "--actor", "Zoë 日本 100%"]);
    expect(set.last).toBe("BUS_ROUTED team:blue is now on (by Zoë 日本 100%: pilot); audit seq 1 in chain _system");
    const limit = await cli.run(["limits", "set", "--tenant", "acme", "--weight", "4", "--reason", "share", "--actor", "sre:ana", "--json"]);
    expect(JSON.parse(limit.last)).toMatchObject({ orgId: "acme", weight: 4, updatedBy: "sre:ana", audit: { orgId: "acme", seq: 1 } });
    expect((await cli.run(["limits", "clear", "--tenant", "acme", "--reason", "done", "--actor", "sre:bo"])).last).toBe("tenant:acme: limits cleared");
    expect((await chain(cli.db.pool, "_system")).map((r) => r.actor)).toEqual(["Zoë 日本 100%"]);
    expect((await chain(cli.db.pool, "acme")).map((r) => r.actor)).toEqual(["sre:ana", "sre:bo"]);

    const empty = await cli.run(["flags", "set", "BUS_ENABLED", "on", "--reason", "x", "--actor", ""]);
    expect(empty.stderr).toBe("error: INVALID_ARGUMENT: actor must be a non-empty string\n");
    expect(empty.code).toBe(2);
  });

  it("foreign register prints the check the handler answers, and the registry's own paths for an input's problems", async () => {
    const run = await cli.run(["foreign", "register", "lab", "--tenant", "acme", "--url", agent.baseUrl, "--skill", "echo"], { env: { SWITCHYARD_EGRESS_ALLOWED_NETWORKS: "127.0.0.0/8" } });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("checked foreign:lab: checked-agent (A2A 1.0), results by push\n");
    const bad = await cli.run(["foreign", "register", "bad key!", "--tenant", "acme", "--url", "ftp://x", "--allow", "", "--json"]);
    expect(bad.code).toBe(2);
    expect(JSON.parse(bad.last).error.details.errors.map((e: { path: string }) => e.path)).toEqual(["agent_key", "base_url", "allow_host"]);
  });
});
