/**
 * `switchyard ingest create|list|rotate-secret|disable`: the URL and the secret printed once (create, rotate), never
 * by list; generic rotation and verified sources without an encryption key refused with what to do.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createCliEnvironment, type CliEnvironment } from "../cli/helpers.js";
import { WORKFLOW } from "./support.js";

describe("switchyard ingest", () => {
  let cli: CliEnvironment;
  const keyEnv = { SWITCHYARD_SECRET_ENCRYPTION_KEY: randomBytes(32).toString("base64"), SWITCHYARD_PUBLIC_URL: "https://hooks.example.com" };
  beforeAll(async () => {
    cli = await createCliEnvironment();
    await submitWorkflow(cli.db.pool, "acme", parseWorkflowDefinition(WORKFLOW));
  });
  afterAll(async () => {
    await cli?.cleanup();
  });

  it("create prints the URL and the secret once; list, rotate and disable never print an old secret", async () => {
    const created = await cli.run(["ingest", "create", "--tenant", "acme", "--source", "github", "--workflow", "triage", "--json"], { env: keyEnv });
    expect(created.code).toBe(0);
    const out = JSON.parse(created.last);
    expect(out.url).toBe(`https://hooks.example.com/api/v1/ingest/${out.endpoint.id}`);
    expect(out.secret).toMatch(/^[0-9a-f]{64}$/);
    expect(out.endpoint).toMatchObject({ orgId: "acme", source: "github", workflow: "triage", enabled: true, secretFingerprint: expect.stringMatching(/^fp_/) });

    const text = await cli.run(["ingest", "create", "--tenant", "acme", "--source", "cairn", "--workflow", "triage@1"], { env: keyEnv });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^url: https:\/\/hooks\.example\.com\/api\/v1\/ingest\/[A-Za-z0-9_-]{24}$/m);
    expect(text.stdout).toMatch(/^secret: whsec_/m);
    expect(text.stderr).toMatch(/shown this once/);
    const cairnSecret = /^secret: (\S+)$/m.exec(text.stdout)![1]!;

    const list = await cli.run(["ingest", "list", "--tenant", "acme"], { env: keyEnv });
    const listJson = await cli.run(["ingest", "list", "--tenant", "acme", "--json"], { env: keyEnv });
    expect(JSON.parse(listJson.last).endpoints).toHaveLength(2);
    const rotated = await cli.run(["ingest", "rotate-secret", "--tenant", "acme", "--id", out.endpoint.id, "--json"], { env: keyEnv });
    expect(rotated.code).toBe(0);
    const newSecret = JSON.parse(rotated.last).secret;
    expect(newSecret).toMatch(/^[0-9a-f]{64}$/);
    expect(newSecret).not.toBe(out.secret);
    const disabled = await cli.run(["ingest", "disable", "--tenant", "acme", "--id", out.endpoint.id, "--json"], { env: keyEnv });
    expect(JSON.parse(disabled.last).enabled).toBe(false);
    for (const run of [list, listJson, rotated, disabled]) {
      expect(run.stdout + run.stderr).not.toContain(out.secret);
      expect(run.stdout + run.stderr).not.toContain(cairnSecret);
    }
    expect(list.stdout + listJson.stdout + disabled.stdout).not.toContain(newSecret);
  });

  it("generic: no secret; rotation refused because its URL is its credential", async () => {
    const created = await cli.run(["ingest", "create", "--tenant", "acme", "--source", "generic", "--workflow", "triage", "--json"]);
    expect(created.code).toBe(0);
    const out = JSON.parse(created.last);
    expect(out.secret).toBeNull();
    const rotate = await cli.run(["ingest", "rotate-secret", "--tenant", "acme", "--id", out.endpoint.id]);
    expect(rotate.code).not.toBe(0);
    expect(rotate.stderr).toMatch(/URL is its credential/);
  });

  it("without an encryption key a verified source is refused and nothing is stored; a missing workflow is refused", async () => {
    const before = (await cli.db.pool.query("SELECT count(*)::int AS n FROM ingest_endpoints")).rows[0].n;
    const refused = await cli.run(["ingest", "create", "--tenant", "acme", "--source", "slack", "--workflow", "triage"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/FAILED_PRECONDITION: .*SWITCHYARD_SECRET_ENCRYPTION_KEY/);
    const missing = await cli.run(["ingest", "create", "--tenant", "acme", "--source", "github", "--workflow", "nope"], { env: keyEnv });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/workflow "nope" not found/);
    const badSource = await cli.run(["ingest", "create", "--tenant", "acme", "--source", "gitlab", "--workflow", "triage"], { env: keyEnv });
    expect(badSource.code).toBe(2);
    expect((await cli.db.pool.query("SELECT count(*)::int AS n FROM ingest_endpoints")).rows[0].n).toBe(before);
  });
});
