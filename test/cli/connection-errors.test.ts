/**
 * A service that does not answer is named with its address and the setting that pointed there, at CLI commands
 * and at process start-up; the URL's password never appears.
 */
import { TEST_BUS_SECRETS } from "../support/bus-auth.js";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultConfig, type Config } from "../../src/config/index.js";
import { unreachableDependencyOf } from "../../src/process/dependency-health.js";
import { createLogger } from "../../src/logger.js";
import { runHarnessProcess } from "../../src/harness/process.js";
import { freePort } from "../support/ports.js";
import { waitForProgress } from "../support/wait.js";
import { createCliEnvironment, type CliEnvironment, ONE_STEP_WORKFLOW } from "./helpers.js";

const SOME_TASK = "0af1c1c2-1d6b-4c8e-9e0a-7a3c1b2d3e4f";

describe("connection errors", () => {
  let cli: CliEnvironment;
  let deadPort: number;
  beforeAll(async () => {
    cli = await createCliEnvironment();
    deadPort = await freePort();
    await cli.run(["workflow", "submit", await cli.file("one.yaml", ONE_STEP_WORKFLOW), "--tenant", "acme"]);
  });
  afterAll(() => cli.cleanup());

  it("names PostgreSQL, its address and DATABASE_URL, without the password", async () => {
    const result = await cli.run(["task", "get", SOME_TASK, "--tenant", "acme"], { env: { DATABASE_URL: `postgres://postgres:hunter2secret@127.0.0.1:${deadPort}/switchyard` } });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`error: UNAVAILABLE: PostgreSQL at 127.0.0.1:${deadPort} is not answering (DATABASE_URL): ECONNREFUSED\n`);
    const json = await cli.run(["task", "get", SOME_TASK, "--tenant", "acme", "--json"], { env: { DATABASE_URL: `postgres://postgres:hunter2secret@127.0.0.1:${deadPort}/switchyard` } });
    expect(JSON.parse(json.stdout).error).toEqual({
      code: "UNAVAILABLE",
      message: expect.stringContaining(`PostgreSQL at 127.0.0.1:${deadPort}`),
      details: { dependency: "postgres", address: `127.0.0.1:${deadPort}`, variable: "DATABASE_URL" },
    });
    expect(json.stdout).not.toContain("hunter2secret");
  });

  it("refuses a bad workflow file without a database, and says to migrate when the database is missing", async () => {
    // Direct mode validates the file before it connects: a typo is a usage error even where nothing answers.
    const bad = await cli.file("bad.yaml", "name: bad\nsteps:\n  - { id: a, to: nowhere }\n");
    const refused = await cli.run(["workflow", "submit", bad, "--tenant", "acme"], { env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${deadPort}/switchyard` } });
    expect(refused.stderr).toMatch(/^error: INVALID_WORKFLOW: .*bad\.yaml: steps\[0\]\.to: must be role:NAME/m);
    expect(refused.code).toBe(2);

    // A server that answers without the database: Postgres' own words, and what to do about them.
    const missing = new URL(cli.env.DATABASE_URL!);
    missing.pathname = "/switchyard_never_created";
    const good = await cli.file("good.yaml", ONE_STEP_WORKFLOW);
    const noDatabase = await cli.run(["workflow", "submit", good, "--tenant", "acme"], { env: { DATABASE_URL: missing.toString() } });
    expect(noDatabase.stderr).toBe('error: FAILED_PRECONDITION: database "switchyard_never_created" does not exist; run `switchyard migrate` first\n');
    expect(noDatabase.code).toBe(1);
  });

  it("names the flag when the URL came from --database-url, and covers migrate", async () => {
    const result = await cli.run(["migrate", "--database-url", `postgres://postgres:hunter2secret@127.0.0.1:${deadPort}/switchyard`]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`^error: UNAVAILABLE: PostgreSQL at 127\\.0\\.0\\.1:${deadPort} is not answering \\(--database-url\\)`));
    expect(result.stderr).not.toContain("hunter2secret");
  });

  it("names Redis, its address and REDIS_URL when a command needs the bus", async () => {
    const result = await cli.run(["task", "start", "one-step", "--tenant", "acme"], { env: { REDIS_URL: `redis://:hunter2secret@127.0.0.1:${deadPort}` } });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`error: UNAVAILABLE: Redis at 127.0.0.1:${deadPort} is not answering (REDIS_URL)\n`);
    const flagged = await cli.run(["task", "start", "one-step", "--tenant", "acme", "--redis-url", `redis://127.0.0.1:${deadPort}`]);
    expect(flagged.stderr).toMatch(/is not answering \(--redis-url\)/);
  });

  it("names Redis in a harness's start-up wait, and a stop ends that wait", async () => {
    const config: Config = {
      ...defaultConfig,
      redisUrl: `redis://:hunter2secret@127.0.0.1:${deadPort}`,
      databaseUrl: cli.env.DATABASE_URL!,
      busAuth: { secrets: TEST_BUS_SECRETS, publisherKeys: [] },
    };
    let logged = "";
    const sink = new Writable({ write: (chunk, _encoding, done) => ((logged += String(chunk)), done()) });
    const stop = new AbortController();
    const running = runHarnessProcess({ config, role: "echo", handlerPath: "examples/handlers/echo.ts", logger: createLogger({ level: "warn", destination: sink }), signal: stop.signal });
    await waitForProgress({ what: "the start-up wait's warning", progress: () => logged, done: (text) => text.includes("waiting for it before starting"), stallMs: 15_000 });
    stop.abort();
    // Before, the queued Redis check kept this wait (and the process) alive after a stop.
    await expect(running).rejects.toMatchObject({ code: "CANCELLED", details: { interrupted: true } });
    expect(logged).toContain(`redis is unreachable; waiting for it before starting: Redis at 127.0.0.1:${deadPort} is not answering (REDIS_URL)`);
    expect(logged).not.toContain("hunter2secret");
  });

  it("keeps a named error recognisable as an outage of that dependency", async () => {
    const { notAnswering, redisEndpoint, postgresEndpoint } = await import("../../src/process/service-endpoints.js");
    expect(unreachableDependencyOf(notAnswering(redisEndpoint("redis://127.0.0.1:1"), new Error("Connection is closed.")))).toBe("redis");
    expect(unreachableDependencyOf(notAnswering(postgresEndpoint("postgres://u:p@db.internal/x"), new Error("x")))).toBe("postgres");
    expect(postgresEndpoint("postgres://u:p@db.internal/x").address).toBe("db.internal:5432");
    expect(redisEndpoint("redis+cluster://:pw@a:7000,b:7001").address).toBe("cluster a:7000,b:7001");
  });
});
