/**
 * Direct mode (no --url) runs the gateway's own service handlers in-process (src/cli/remote/direct-transport.ts):
 * what only a handler checks is checked here too, the operator is recorded as it names itself through the `cli`
 * channel, Explain answers without a gateway, and an unknown tenant is refused for what would create its data
 * but found empty for reads.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APPROVAL_WORKFLOW, createCliEnvironment, ONE_STEP_WORKFLOW, type CliEnvironment } from "./helpers.js";

let cli: CliEnvironment;
beforeAll(async () => {
  cli = await createCliEnvironment();
  for (const [name, text] of [["one.yaml", ONE_STEP_WORKFLOW], ["approval.yaml", APPROVAL_WORKFLOW]] as const) {
    expect((await cli.run(["workflow", "submit", await cli.file(name, text), "--tenant", "acme"])).code).toBe(0);
  }
});
afterAll(async () => {
  await cli?.cleanup();
});

describe("direct mode through the gateway's handlers", () => {
  it("refuses what only TaskService.Start checks: an idempotency key over 256 characters", async () => {
    const run = await cli.run(["task", "start", "one-step", "--tenant", "acme", "--idempotency-key", "k".repeat(257)]);
    expect(run.stderr).toBe("error: INVALID_ARGUMENT: idempotency_key: at most 256 characters\n");
    expect(run.code).toBe(2);
    const { rows } = await cli.db.pool.query("SELECT count(*)::int AS n FROM tasks WHERE org_id = 'acme'");
    expect(rows[0].n).toBe(0);
  });

  it("records a decision as the operator said, via cli (not as an API key)", async () => {
    const taskId = (await cli.run(["task", "start", "needs-approval", "--tenant", "acme"])).last;
    const parked = JSON.parse((await cli.run(["task", "get", taskId, "--tenant", "acme", "--json"])).last);
    const approvalId = parked.steps[0].approvalId as string;
    const decided = await cli.run(["approval", "deny", approvalId, "--tenant", "acme", "--actor", "dana", "--json"]);
    expect(JSON.parse(decided.last)).toEqual({ approvalId, status: "denied", decidedBy: "dana", alreadyDecided: false });
    const { rows } = await cli.db.pool.query("SELECT decided_by, decided_via FROM approvals WHERE id = $1", [approvalId]);
    expect(rows).toEqual([{ decided_by: "dana", decided_via: "cli" }]);
  });

  it("explains a stall with TaskService.Explain, which direct mode never called before", async () => {
    const taskId = (await cli.run(["task", "start", "one-step", "--tenant", "acme"])).last;
    // No harness reads role:echo: `task watch` gives up and says why, from the handler's reading of the facts.
    const run = await cli.run(["task", "watch", taskId, "--tenant", "acme", "--timeout", "1", "--explain-after", "5"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: TIMEOUT: task .* is still running after 1 s/);
    expect(run.stdout).toMatch(/\n {2}step only: no harness has ever read role:echo/);
  });

  it("refuses to start a task for an unknown tenant with the command that creates it; reads of it find nothing", async () => {
    const start = await cli.run(["task", "start", "one-step", "--tenant", "ghost"]);
    expect(start.code).toBe(1);
    expect(start.stderr).toBe("error: NOT_FOUND: no tenant ghost; create it with `switchyard tenant create ghost`\n");
    const list = await cli.run(["task", "list", "--tenant", "ghost", "--json"]);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.last)).toEqual({ tasks: [], nextPageToken: null });
  });
});
