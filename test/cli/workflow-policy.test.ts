import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCliEnvironment, ONE_STEP_WORKFLOW, type CliEnvironment } from "./helpers.js";

let cli: CliEnvironment;
beforeAll(async () => {
  cli = await createCliEnvironment({ tenants: ["acme", "lister", "pol", "pol2"] });
});
afterAll(async () => {
  await cli?.cleanup();
});

describe("workflow submit / get / list", () => {
  it("prints name@version on the last line and reuses the version for an identical definition", async () => {
    const file = await cli.file("one.yaml", ONE_STEP_WORKFLOW);
    const first = await cli.run(["workflow", "submit", file, "--tenant", "acme"]);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.last).toBe("one-step@1");

    const again = await cli.run(["workflow", "submit", file, "--tenant", "acme"]);
    expect(again.code).toBe(0);
    expect(again.last).toBe("one-step@1");
    expect(again.stdout).toMatch(/unchanged/);

    const changed = await cli.file("one-b.yaml", ONE_STEP_WORKFLOW.replace("cost_estimate: 1.5", "cost_estimate: 2"));
    const second = await cli.run(["workflow", "submit", changed, "--tenant", "acme", "--json"]);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.last)).toMatchObject({ name: "one-step", version: 2, ref: "one-step@2", created: true });
  });

  it("exits 2 on an invalid file, naming the file and the field", async () => {
    const file = await cli.file("bad.yaml", "name: broken\nsteps:\n  - id: a\n    to: nowhere\n");
    const result = await cli.run(["workflow", "submit", file, "--tenant", "acme"]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^error: INVALID_WORKFLOW: /);
    expect(result.stderr).toContain(`${cli.dir}/bad.yaml`);
    expect(result.stderr).toContain("steps[0].to");

    const json = await cli.run(["workflow", "submit", file, "--tenant", "acme", "--json"]);
    expect(json.code).toBe(2);
    const error = JSON.parse(json.last).error;
    expect(error.code).toBe("INVALID_WORKFLOW");
    expect(error.details).toMatchObject({ path: "steps[0].to", file: `${cli.dir}/bad.yaml` });
  });

  it("exits 2 for a missing file and for a missing --tenant", async () => {
    const missing = await cli.run(["workflow", "submit", "nope.yaml", "--tenant", "acme"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/error: INVALID_ARGUMENT: cannot read .*nope\.yaml: no such file/);
    const noTenant = await cli.run(["workflow", "submit", "whatever.yaml"]);
    expect(noTenant.code).toBe(2);
    expect(noTenant.stderr).toMatch(/error: INVALID_ARGUMENT: .*--tenant/);
  });

  it("refuses to create anything for a tenant that does not exist, with the command that creates it", async () => {
    const file = await cli.file("ghost.yaml", ONE_STEP_WORKFLOW);
    const submit = await cli.run(["workflow", "submit", file, "--tenant", "ghost"]);
    expect(submit.code).toBe(1);
    expect(submit.stderr).toBe("error: NOT_FOUND: no tenant ghost; create it with `switchyard tenant create ghost`\n");
    const policy = await cli.file("ghost-policy.yaml", "default: allow\n");
    expect((await cli.run(["policy", "set", policy, "--tenant", "ghost"])).stderr).toMatch(/NOT_FOUND: no tenant ghost/);
    expect((await cli.run(["task", "start", "one-step", "--tenant", "ghost"])).stderr).toMatch(/NOT_FOUND: no tenant ghost/);
    const registered = await cli.run(["foreign", "register", "agent", "--tenant", "ghost", "--url", "https://agent.example.com"]);
    expect(registered.stderr).toMatch(/NOT_FOUND: no tenant ghost/);
    const { rows } = await cli.db.pool.query(
      `SELECT (SELECT count(*) FROM workflows WHERE org_id = 'ghost') + (SELECT count(*) FROM policies WHERE org_id = 'ghost')
            + (SELECT count(*) FROM tasks WHERE org_id = 'ghost') + (SELECT count(*) FROM foreign_agents WHERE org_id = 'ghost') AS n`,
    );
    expect(Number(rows[0].n)).toBe(0);
    // Reads of an unknown tenant simply find nothing.
    expect((await cli.run(["workflow", "list", "--tenant", "ghost", "--json"])).code).toBe(0);
  });

  it("gets a version as YAML or JSON and lists the latest of each name", async () => {
    const file = await cli.file("list.yaml", ONE_STEP_WORKFLOW.replace("one-step", "listed"));
    expect((await cli.run(["workflow", "submit", file, "--tenant", "lister"])).code).toBe(0);

    const yaml = await cli.run(["workflow", "get", "listed", "--tenant", "lister"]);
    expect(yaml.code).toBe(0);
    expect(yaml.lines[0]).toMatch(/^# listed@1 /);
    expect(yaml.stdout).toContain("to: role:echo");

    const json = await cli.run(["workflow", "get", "listed@1", "--tenant", "lister", "--json"]);
    const got = JSON.parse(json.last);
    expect(got).toMatchObject({ name: "listed", version: 1, ref: "listed@1" });
    expect(got.definition.steps).toEqual([expect.objectContaining({ id: "only", to: "role:echo", needs: [], cost_estimate: 1.5 })]);
    expect(new Date(got.createdAt).toISOString()).toBe(got.createdAt);

    const list = await cli.run(["workflow", "list", "--tenant", "lister", "--json"]);
    expect(JSON.parse(list.last)).toEqual({
      workflows: [{ name: "listed", version: 1, ref: "listed@1", versions: 1, description: "a single echo step", createdAt: expect.any(String) }],
    });
    const table = await cli.run(["workflow", "list", "--tenant", "lister"]);
    expect(table.lines[0]).toMatch(/^NAME\s+LATEST\s+VERSIONS/);
    expect(table.lines[1]).toMatch(/^listed\s+listed@1\s+1/);

    const unknown = await cli.run(["workflow", "get", "ghost", "--tenant", "lister"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: NOT_FOUND: /);
  });
});

describe("policy set / get", () => {
  it("stores versions, shows the latest, and falls back to the built-in default", async () => {
    const before = await cli.run(["policy", "get", "--tenant", "pol", "--json"]);
    expect(before.code).toBe(0);
    expect(JSON.parse(before.last)).toMatchObject({ tenant: "pol", version: null, builtin: true, document: { default: "allow" } });

    const file = await cli.file("policy.yaml", 'default: deny\nrules:\n  - id: allow-echo\n    destination: "role:echo"\n    verdict: allow\n    reason: echo is harmless\n');
    const set = await cli.run(["policy", "set", file, "--tenant", "pol"]);
    expect(set.code).toBe(0);
    expect(set.last).toBe("version 1");
    expect((await cli.run(["policy", "set", file, "--tenant", "pol"])).last).toBe("version 2");

    const after = await cli.run(["policy", "get", "--tenant", "pol", "--json"]);
    const got = JSON.parse(after.last);
    expect(got).toMatchObject({ tenant: "pol", version: 2, builtin: false, document: { default: "deny" } });
    expect(got.document.rules[0]).toMatchObject({ id: "allow-echo", destination: ["role:echo"], verdict: "allow" });

    const human = await cli.run(["policy", "get", "--tenant", "pol"]);
    expect(human.lines[0]).toBe("# version 2");
  });

  it("exits 2 for an invalid policy, naming the file and the field", async () => {
    const file = await cli.file("bad-policy.yaml", "default: maybe\n");
    const result = await cli.run(["policy", "set", file, "--tenant", "pol2"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: INVALID_POLICY: .*bad-policy\.yaml: /);
    const json = await cli.run(["policy", "set", file, "--tenant", "pol2", "--json"]);
    expect(JSON.parse(json.last).error).toMatchObject({ code: "INVALID_POLICY", details: { path: "default" } });
    expect(JSON.parse((await cli.run(["policy", "get", "--tenant", "pol2", "--json"])).last).version).toBeNull();
  });
});
