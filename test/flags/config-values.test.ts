/**
 * Flag defaults from the environment (src/config/index.ts) and the semantics of a snapshot (FlagValues): everything
 * off by default, the global value as master switch, a stored row overriding its scope's default.
 */
import { describe, expect, it } from "vitest";
import { defaultConfig, loadConfig, type FlagsConfig } from "../../src/config/index.js";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import type { FlagRow } from "../../src/flags/flag-types.js";
import { FlagValues } from "../../src/flags/flag-values.js";

function configError(env: Record<string, string>): SwitchyardError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    expect((error as SwitchyardError).code).toBe(ErrorCode.Config);
    return error as SwitchyardError;
  }
  throw new Error("expected a CONFIG error");
}

function row(name: FlagRow["name"], scopeKind: FlagRow["scopeKind"], scope: string, enabled: boolean): FlagRow {
  return { name, scopeKind, scope, enabled, updatedBy: "t", reason: "r", updatedAt: new Date(0).toISOString() };
}

const OFF: FlagsConfig = defaultConfig.flags;

describe("flag defaults from the environment", () => {
  it("are all off when nothing is set", () => {
    expect(loadConfig({}).flags).toEqual({
      busEnabled: false,
      coordinatorEnabled: false,
      coordinatorTenants: [],
      harnessEnabled: false,
      harnessScopes: [],
      busRouted: [],
      egressEnabled: false,
      egressTenants: [],
      replyEnabled: false,
      replyTenants: [],
      pollMs: 1000,
    });
    const values = new FlagValues(loadConfig({}).flags, []);
    expect(values.busEnabled()).toBe(false);
    expect(values.coordinatorEnabled("acme")).toBe(false);
    expect(values.harnessEnabled("role", "writer")).toBe(false);
    expect(values.busRouted("role", "writer")).toBe(false);
    expect(values.egressEnabled("acme")).toBe(false);
  });

  it("parses booleans, tenant lists, queue lists and *", () => {
    const flags = loadConfig({
      SWITCHYARD_BUS_ENABLED: "true",
      SWITCHYARD_COORDINATOR_ENABLED: "TRUE",
      SWITCHYARD_COORDINATOR_TENANTS: " acme , globex ",
      SWITCHYARD_HARNESS_ENABLED: "true",
      SWITCHYARD_HARNESS_SCOPES: "role:writer,team:ops",
      SWITCHYARD_BUS_ROUTED: "*",
      SWITCHYARD_A2A_EGRESS_ENABLED: "false",
      SWITCHYARD_A2A_EGRESS_TENANTS: "*",
      SWITCHYARD_REPLY_ENABLED: "true",
      SWITCHYARD_REPLY_TENANTS: "acme",
      SWITCHYARD_FLAGS_POLL_MS: "250",
    }).flags;
    expect(flags).toEqual({
      busEnabled: true,
      coordinatorEnabled: true,
      coordinatorTenants: ["acme", "globex"],
      harnessEnabled: true,
      harnessScopes: ["role:writer", "team:ops"],
      busRouted: "*",
      egressEnabled: false,
      egressTenants: "*",
      replyEnabled: true,
      replyTenants: ["acme"],
      pollMs: 250,
    });
    const values = new FlagValues(flags, []);
    expect(values.replyEnabled("acme")).toBe(true);
    expect(values.replyEnabled("globex")).toBe(false);
    expect(values.coordinatorEnabled("acme")).toBe(true);
    expect(values.coordinatorEnabled("initech")).toBe(false);
    expect(values.harnessEnabled("team", "ops")).toBe(true);
    expect(values.harnessEnabled("role", "ops")).toBe(false);
    expect(values.busRouted("team", "anything")).toBe(true);
    // Listed for every tenant, but the global master switch is off.
    expect(values.egressEnabled("acme")).toBe(false);
  });

  it("refuses bad values with a CONFIG error naming the variable", () => {
    expect(configError({ SWITCHYARD_BUS_ENABLED: "yes" }).message).toMatch(/SWITCHYARD_BUS_ENABLED must be true or false, got "yes"/);
    expect(configError({ SWITCHYARD_COORDINATOR_TENANTS: "acme,,globex" }).message).toMatch(/SWITCHYARD_COORDINATOR_TENANTS .* item 2 is an empty item/);
    expect(configError({ SWITCHYARD_A2A_EGRESS_TENANTS: "acme,*" }).message).toMatch(/item 2 is "\*" mixed with names/);
    expect(configError({ SWITCHYARD_HARNESS_SCOPES: "writer" }).message).toMatch(/SWITCHYARD_HARNESS_SCOPES must be "\*" or a comma-separated list like role:writer,team:ops; item 1 is "writer"/);
    expect(configError({ SWITCHYARD_BUS_ROUTED: "foreign:x" }).details).toEqual({ variable: "SWITCHYARD_BUS_ROUTED" });
    expect(configError({ SWITCHYARD_COORDINATOR_TENANTS: "has space" }).message).toMatch(/item 1 is "has space"/);
    expect(configError({ SWITCHYARD_FLAGS_POLL_MS: "10" }).message).toMatch(/SWITCHYARD_FLAGS_POLL_MS must be an integer >= 50/);
  });
});

describe("flag values (defaults + stored rows)", () => {
  it("treats the global value as a master switch over every scope", () => {
    const values = new FlagValues({ ...OFF, coordinatorTenants: "*", harnessScopes: "*" }, [row("HARNESS_ENABLED", "role", "writer", true)]);
    expect(values.coordinatorEnabled("acme")).toBe(false);
    expect(values.harnessEnabled("role", "writer")).toBe(false);
    const on = new FlagValues({ ...OFF, coordinatorTenants: "*" }, [row("COORDINATOR_ENABLED", "global", "", true), row("HARNESS_ENABLED", "global", "", true), row("HARNESS_ENABLED", "role", "writer", true)]);
    expect(on.coordinatorEnabled("acme")).toBe(true);
    expect(on.harnessEnabled("role", "writer")).toBe(true);
    expect(on.harnessEnabled("role", "reader")).toBe(false);
  });

  it("lets a stored row override the environment's default for exactly its scope", () => {
    const defaults: FlagsConfig = { ...OFF, busEnabled: true, egressEnabled: true, egressTenants: ["acme", "globex"], busRouted: ["role:researcher"] };
    const values = new FlagValues(defaults, [
      row("BUS_ENABLED", "global", "", false),
      row("A2A_EGRESS_ENABLED", "tenant", "globex", false),
      row("BUS_ROUTED", "role", "researcher", false),
      row("BUS_ROUTED", "team", "ops", true),
    ]);
    expect(values.busEnabled()).toBe(false);
    expect(values.egressEnabled("acme")).toBe(true);
    expect(values.egressEnabled("globex")).toBe(false);
    expect(values.busRouted("role", "researcher")).toBe(false);
    expect(values.busRouted("team", "ops")).toBe(true);
    expect(values.value("BUS_ROUTED", "team", "ops")).toBe(true);
    expect(values.defaultValue("BUS_ROUTED", "team", "ops")).toBe(false);
  });

  it("describes the tenants a coordinator serves as a SQL-usable selection", () => {
    expect(new FlagValues({ ...OFF, coordinatorTenants: "*" }, []).coordinatorTenants()).toEqual({ only: [] });
    const all = new FlagValues({ ...OFF, coordinatorEnabled: true, coordinatorTenants: "*" }, [row("COORDINATOR_ENABLED", "tenant", "b", false)]);
    expect(all.coordinatorTenants()).toEqual({ except: ["b"] });
    const listed = new FlagValues({ ...OFF, coordinatorEnabled: true, coordinatorTenants: ["a", "b"] }, [
      row("COORDINATOR_ENABLED", "tenant", "b", false),
      row("COORDINATOR_ENABLED", "tenant", "c", true),
    ]);
    expect(listed.coordinatorTenants()).toEqual({ only: ["a", "c"] });
    for (const tenant of ["a", "b", "c", "d"]) {
      const selection = listed.coordinatorTenants();
      const selected = "only" in selection ? selection.only.includes(tenant) : !selection.except.includes(tenant);
      expect(selected, tenant).toBe(listed.coordinatorEnabled(tenant));
    }
  });

  it("lists globals, environment scopes and stored rows with what is in force", () => {
    const values = new FlagValues({ ...OFF, harnessEnabled: true, harnessScopes: ["role:writer"], coordinatorTenants: "*" }, [row("HARNESS_ENABLED", "role", "writer", false)]);
    const views = values.describe();
    expect(views.find((v) => v.name === "HARNESS_ENABLED" && v.scope === "writer")).toMatchObject({ enabled: false, effective: false, source: "table", updatedBy: "t" });
    expect(views.find((v) => v.name === "COORDINATOR_ENABLED" && v.scope === "*")).toMatchObject({ scopeKind: "tenant", enabled: true, effective: false, source: "env" });
    expect(views.find((v) => v.name === "HARNESS_ENABLED" && v.scopeKind === "global")).toMatchObject({ enabled: true, effective: true, source: "env" });
    expect(views.filter((v) => v.scopeKind === "global").map((v) => v.name)).toEqual(["BUS_ENABLED", "COORDINATOR_ENABLED", "HARNESS_ENABLED", "A2A_EGRESS_ENABLED", "REPLY_ENABLED"]);
  });
});
