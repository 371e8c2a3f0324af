import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedisBus } from "../../src/bus/redis-bus.js";
import { adminUrl, databaseUrl } from "../support/env.js";
import { createCliEnvironment, ONE_STEP_WORKFLOW, type CliEnvironment } from "./helpers.js";

let cli: CliEnvironment;
beforeAll(async () => {
  cli = await createCliEnvironment();
  const file = await cli.file("one.yaml", ONE_STEP_WORKFLOW);
  expect((await cli.run(["workflow", "submit", file, "--tenant", "acme"])).code).toBe(0);
});
afterAll(async () => {
  await cli?.cleanup();
});

describe("audit verify / list", () => {
  it("exits 0 for an intact chain and 1 naming the first tampered seq", async () => {
    const empty = await cli.run(["audit", "verify", "--tenant", "nobody", "--json"]);
    expect(empty.code).toBe(0);
    expect(JSON.parse(empty.last)).toEqual({ tenant: "nobody", ok: true, rows: 0, headSeq: 0 });

    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await cli.run(["task", "start", "one-step", "--tenant", "acme"])).last);
    const listed = JSON.parse((await cli.run(["audit", "list", "--tenant", "acme", "--json"])).last).rows as Array<Record<string, unknown>>;
    expect(listed.map((r) => r.seq)).toEqual([1, 2, 3]);
    expect(listed[1]).toMatchObject({ orgId: "acme", action: "dispatch", actor: "coordinator", destination: "role:echo", verdict: "allow", taskId: ids[1], stepId: "only" });
    const oneTask = JSON.parse((await cli.run(["audit", "list", "--tenant", "acme", "--task", ids[2]!, "--json"])).last).rows;
    expect(oneTask.map((r: { seq: number }) => r.seq)).toEqual([3]);
    const paged = JSON.parse((await cli.run(["audit", "list", "--tenant", "acme", "--after", "1", "--limit", "1", "--json"])).last).rows;
    expect(paged.map((r: { seq: number }) => r.seq)).toEqual([2]);

    const intact = await cli.run(["audit", "verify", "--tenant", "acme"]);
    expect(intact.code).toBe(0);
    expect(intact.last).toBe("audit chain of tenant acme is intact: 3 rows verified, head at seq 3");

    await cli.db.pool.query("UPDATE audit_log SET reason = 'nothing to see here' WHERE org_id = 'acme' AND seq = 2");
    const broken = await cli.run(["audit", "verify", "--tenant", "acme"]);
    expect(broken.code).toBe(1);
    expect(broken.last).toMatch(/BROKEN at seq 2: /);
    expect(broken.stderr).toMatch(/^error: AUDIT_BROKEN: .*broken at seq 2/);
    const brokenJson = await cli.run(["audit", "verify", "--tenant", "acme", "--json"]);
    expect(brokenJson.code).toBe(1);
    expect(JSON.parse(brokenJson.last)).toMatchObject({ tenant: "acme", ok: false, headSeq: 3, firstBroken: { seq: 2 } });
  });
});

describe("dlq list / replay", () => {
  it("discovers every dead-letter stream under the prefix and replays them", async () => {
    const bus = createRedisBus({ redis: cli.redis.redis, keyPrefix: cli.redis.prefix, maxPayloadBytes: 1024 * 1024, maxDeliveries: 5 });
    const none = await cli.run(["dlq", "list", "--json"]);
    expect(none.code).toBe(0);
    expect(JSON.parse(none.last)).toEqual({ deadLetters: [] });

    for (const stream of ["role:writer", "coordinator"]) {
      await bus.ensureGroup(stream, "g");
      await cli.redis.redis.xadd(`${cli.redis.prefix}{${stream}}`, "*", "e", "not protobuf");
      // The bus dead-letters an entry that does not decode as soon as a consumer reads it.
      expect(await bus.read({ stream, group: "g", consumer: "c", count: 10, blockMs: 0 })).toEqual([]);
    }
    const all = JSON.parse((await cli.run(["dlq", "list", "--json"])).last).deadLetters as Array<Record<string, unknown>>;
    expect(all.map((l) => l.stream).sort()).toEqual(["coordinator", "role:writer"]);
    expect(all.find((l) => l.stream === "role:writer")).toMatchObject({ reason: expect.stringMatching(/MALFORMED_ENVELOPE/), bytes: 12, envelope: null });

    const table = await cli.run(["dlq", "list", "--stream", "role:writer"]);
    expect(table.stdout).toMatch(/role:writer\s+\S+-\S+/);
    expect(table.stdout).toContain("(undecodable)");
    expect(table.stdout).not.toContain("coordinator");

    const usage = await cli.run(["dlq", "replay", "--stream", "role:writer"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--id .* --all/);
    const badStream = await cli.run(["dlq", "list", "--stream", "{bad}"]);
    expect(badStream.code).toBe(2);

    const badId = await cli.run(["dlq", "replay", "--stream", "role:writer", "--id", "not-an-id"]);
    expect(badId.code).toBe(2);
    expect(badId.stderr).toMatch(/^error: INVALID_ARGUMENT: .*not a stream entry id/);

    const replayed = await cli.run(["dlq", "replay", "--stream", "role:writer", "--all"]);
    expect(replayed.code).toBe(0);
    expect(replayed.last).toBe("replayed 1");
    expect(await cli.redis.redis.xlen(`${cli.redis.prefix}{role:writer}:dead`)).toBe(0);

    const coordinatorId = all.find((l) => l.stream === "coordinator")!.id as string;
    const byId = await cli.run(["dlq", "replay", "--stream", "coordinator", "--id", coordinatorId, "--json"]);
    expect(JSON.parse(byId.last)).toEqual({ stream: "coordinator", replayed: 1 });
    expect(JSON.parse((await cli.run(["dlq", "list", "--json"])).last)).toEqual({ deadLetters: [] });
  });
});

describe("migrate", () => {
  it("creates a missing database, applies the migrations, and is a no-op the second time", async () => {
    const name = `sy_test_cli_${randomBytes(4).toString("hex")}`;
    const url = databaseUrl(name);
    try {
      const first = await cli.run(["migrate", "--database-url", url]);
      expect(first.stderr).toBe("");
      expect(first.code).toBe(0);
      expect(first.lines[0]).toMatch(/^applied 0001_/);
      expect(first.last).toMatch(/^database at schema version \d+$/);
      const again = await cli.run(["--database-url", url, "migrate", "--json"]);
      expect(JSON.parse(again.last)).toEqual({ applied: [], version: expect.any(Number) });
    } finally {
      const admin = new pg.Client({ connectionString: adminUrl() });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });

  it("refuses a database with a newer schema (exit 1) and tells commands to migrate a behind one", async () => {
    await cli.db.pool.query("INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future')");
    try {
      const refused = await cli.run(["migrate"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^error: SCHEMA_TOO_NEW: /);
    } finally {
      await cli.db.pool.query("DELETE FROM schema_migrations WHERE version = 9999");
    }
  });

  it("reports a bad DATABASE_URL as a usage error and an unreachable database as UNAVAILABLE", async () => {
    const bad = await cli.run(["workflow", "list", "--tenant", "x", "--database-url", "mysql://nope"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: CONFIG: DATABASE_URL must use postgres: or postgresql:/);
    const down = await cli.run(["workflow", "list", "--tenant", "x", "--database-url", "postgres://postgres@127.0.0.1:1/none"]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^error: UNAVAILABLE: PostgreSQL at 127\.0\.0\.1:1 is not answering \(--database-url\)/);
  });
});
