/**
 * Ids that are not UUIDs are usage errors (exit 2, naming the argument), found before any connection is made:
 * the environment here names no database and no Redis, so reaching one would fail differently.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.js";

async function run(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    env: { DATABASE_URL: "postgres://postgres@127.0.0.1:1/none", REDIS_URL: "redis://127.0.0.1:1" },
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    handleSignals: false,
  });
  return { code, stdout, stderr };
}

describe("id arguments", () => {
  const positional: string[][] = [
    ["task", "get", "nope", "--tenant", "acme"],
    ["task", "cancel", "nope", "--tenant", "acme"],
    ["task", "reply", "nope", "--text", "hi", "--tenant", "acme"],
    ["task", "watch", "nope", "--tenant", "acme"],
    ["approval", "approve", "nope", "--tenant", "acme"],
    ["approval", "deny", "nope", "--tenant", "acme"],
    ["approval", "link", "nope", "--tenant", "acme"],
    ["apikey", "revoke", "nope"],
  ];

  it.each(positional)("%s %s refuses a non-UUID id with exit 2 naming the argument", async (...argv) => {
    const result = await run(argv);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: INVALID_ARGUMENT: .*'nope'.*argument 'id'.*expected a UUID/);
  });

  it("refuses a non-UUID --task with exit 2 naming the option, in --json form too", async () => {
    const list = await run(["approval", "list", "--tenant", "acme", "--task", "123", "--json"]);
    expect(list.code).toBe(2);
    expect(JSON.parse(list.stdout).error).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/--task <id>.*'123'.*expected a UUID/) });
    const audit = await run(["audit", "list", "--tenant", "acme", "--task", "123"]);
    expect(audit.code).toBe(2);
    expect(audit.stderr).toMatch(/--task <id>.*expected a UUID/);
  });

  it("accepts an upper-case UUID as the same id (it gets past parsing to the connection)", async () => {
    const result = await run(["task", "get", "0AF1C1C2-1D6B-4C8E-9E0A-7A3C1B2D3E4F", "--tenant", "acme"]);
    expect(result.stderr).not.toMatch(/expected a UUID/);
  });
});
