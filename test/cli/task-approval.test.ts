/**
 * task and approval commands against a real database and bus; no worker runs, so tasks stay where the
 * coordinator's first decision put them (dispatched, or parked on an approval).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APPROVAL_WORKFLOW, createCliEnvironment, ONE_STEP_WORKFLOW, type CliEnvironment } from "./helpers.js";

let cli: CliEnvironment;
beforeAll(async () => {
  cli = await createCliEnvironment();
  const oneStep = await cli.file("one.yaml", ONE_STEP_WORKFLOW);
  const approval = await cli.file("approval.yaml", APPROVAL_WORKFLOW);
  for (const file of [oneStep, approval]) expect((await cli.run(["workflow", "submit", file, "--tenant", "acme"])).code).toBe(0);
});
afterAll(async () => {
  await cli?.cleanup();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe("task start / get / cancel", () => {
  it("prints the task id alone on the last line; get --json is the TaskView", async () => {
    const started = await cli.run(["task", "start", "one-step", "--tenant", "acme", "--input", '{"topic":"tides"}']);
    expect(started.stderr).toBe("");
    expect(started.code).toBe(0);
    expect(started.last).toMatch(UUID);
    const id = started.last;

    const got = await cli.run(["task", "get", id, "--tenant", "acme", "--json"]);
    expect(got.code).toBe(0);
    const view = JSON.parse(got.last);
    expect(view).toMatchObject({ id, orgId: "acme", workflow: "one-step@1", status: "running", input: { topic: "tides" }, budget: 10, error: null, finishedAt: null });
    expect(view.steps).toEqual([
      expect.objectContaining({ id: "only", kind: "workflow", status: "dispatched", destination: "role:echo", attempts: 1, cost: expect.any(Number), approvalId: null }),
    ]);

    const human = await cli.run(["task", "get", id, "--tenant", "acme"]);
    expect(human.lines[0]).toBe(`task ${id} (one-step@1) for tenant acme`);
    expect(human.stdout).toMatch(/STEP\s+STATUS\s+ATTEMPTS\s+COST/);
    expect(human.stdout).toMatch(/only\s+dispatched\s+1/);

    // Another tenant does not see it.
    const other = await cli.run(["task", "get", id, "--tenant", "someone-else"]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^error: NOT_FOUND: /);
  });

  it("returns the same task for a repeated idempotency key; --json prints the TaskView last", async () => {
    const first = await cli.run(["task", "start", "one-step@1", "--tenant", "acme", "--idempotency-key", "k-1", "--json"]);
    expect(first.code).toBe(0);
    const view = JSON.parse(first.last);
    expect(view).toMatchObject({ workflow: "one-step@1", status: "running" });
    expect(first.stderr).toMatch(/started: task/);
    const again = await cli.run(["task", "start", "one-step", "--tenant", "acme", "--idempotency-key", "k-1"]);
    expect(again.last).toBe(view.id);
    expect(again.stdout).toMatch(/already started/);
  });

  it("fails with NOT_FOUND for an unknown workflow and with exit 2 for bad input JSON", async () => {
    const unknown = await cli.run(["task", "start", "no-such-flow", "--tenant", "acme"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: NOT_FOUND: workflow "no-such-flow" not found/);

    const unknownJson = await cli.run(["task", "start", "no-such-flow", "--tenant", "acme", "--json"]);
    expect(unknownJson.code).toBe(1);
    expect(JSON.parse(unknownJson.last).error.code).toBe("NOT_FOUND");

    const badInput = await cli.run(["task", "start", "one-step", "--tenant", "acme", "--input", "{topic:"]);
    expect(badInput.code).toBe(2);
    expect(badInput.stderr).toMatch(/^error: INVALID_ARGUMENT: --input is not valid JSON/);

    const badTimeout = await cli.run(["task", "start", "one-step", "--tenant", "acme", "--wait", "--timeout", "soon"]);
    expect(badTimeout.code).toBe(2);
    expect(badTimeout.stderr).toMatch(/^error: INVALID_ARGUMENT: .*--timeout/);
  });

  it("--wait with --timeout gives up with TIMEOUT (exit 1) while no worker serves the queue", async () => {
    const result = await cli.run(["task", "start", "one-step", "--tenant", "acme", "--wait", "--timeout", "0.5"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/step only \(role:echo\): dispatched, attempt 1/);
    expect(result.stderr).toMatch(/^error: TIMEOUT: task .* is still running after 0\.5 s/);
  });

  it("cancels a running task once; cancelling again says so", async () => {
    const id = (await cli.run(["task", "start", "one-step", "--tenant", "acme"])).last;
    const cancelled = await cli.run(["task", "cancel", id, "--tenant", "acme", "--reason", "changed my mind", "--json"]);
    expect(cancelled.code).toBe(0);
    const view = JSON.parse(cancelled.last);
    expect(view.status).toBe("cancelled");
    expect(view.steps[0].status).toBe("cancelled");
    const again = await cli.run(["task", "cancel", id, "--tenant", "acme"]);
    expect(again.code).toBe(0);
    expect(again.last).toBe(`task ${id} is already cancelled; nothing to cancel`);
    const audit = JSON.parse((await cli.run(["audit", "list", "--tenant", "acme", "--task", id, "--json"])).last);
    expect(audit.rows.map((r: { action: string }) => r.action)).toContain("cancel");
  });
});

describe("approval list / approve / deny", () => {
  it("lists the pending approval; a second decision reports the first", async () => {
    const taskId = (await cli.run(["task", "start", "needs-approval", "--tenant", "acme"])).last;
    const parked = JSON.parse((await cli.run(["task", "get", taskId, "--tenant", "acme", "--json"])).last);
    expect(parked.status).toBe("parked");
    const approvalId = parked.steps[0].approvalId as string;
    expect(approvalId).toMatch(UUID);

    const listed = JSON.parse((await cli.run(["approval", "list", "--tenant", "acme", "--task", taskId, "--json"])).last);
    expect(listed.approvals).toEqual([
      expect.objectContaining({ id: approvalId, taskId, stepId: "ship", destination: "role:publisher", rule: "builtin:approval-hint", status: "pending", decidedBy: null }),
    ]);
    const table = await cli.run(["approval", "list", "--tenant", "acme"]);
    expect(table.stdout).toContain(approvalId);

    const approved = await cli.run(["approval", "approve", approvalId, "--tenant", "acme", "--actor", "alice", "--reason", "looks fine"]);
    expect(approved.code).toBe(0);
    expect(approved.last).toBe(`approved approval ${approvalId} as alice`);

    const twice = await cli.run(["approval", "approve", approvalId, "--tenant", "acme", "--actor", "bob"]);
    expect(twice.code).toBe(0);
    expect(twice.last).toBe("already decided: approved by alice");
    const denyLate = await cli.run(["approval", "deny", approvalId, "--tenant", "acme", "--actor", "bob", "--json"]);
    expect(denyLate.code).toBe(0);
    expect(JSON.parse(denyLate.last)).toEqual({ approvalId, status: "approved", decidedBy: "alice", alreadyDecided: true });

    expect(JSON.parse((await cli.run(["approval", "list", "--tenant", "acme", "--task", taskId, "--json"])).last).approvals).toEqual([]);
    const all = JSON.parse((await cli.run(["approval", "list", "--tenant", "acme", "--task", taskId, "--status", "all", "--json"])).last);
    expect(all.approvals[0]).toMatchObject({ status: "approved", decidedBy: "alice" });
    const after = JSON.parse((await cli.run(["task", "get", taskId, "--tenant", "acme", "--json"])).last);
    expect(after.steps[0].status).toBe("dispatched");
  });

  it("denies: the parked step fails; an unknown approval is NOT_FOUND; a bad --status is a usage error", async () => {
    const taskId = (await cli.run(["task", "start", "needs-approval", "--tenant", "acme"])).last;
    const approvalId = JSON.parse((await cli.run(["task", "get", taskId, "--tenant", "acme", "--json"])).last).steps[0].approvalId;
    const denied = await cli.run(["approval", "deny", approvalId, "--tenant", "acme", "--actor", "carol"]);
    expect(denied.last).toBe(`denied approval ${approvalId} as carol`);
    expect(JSON.parse((await cli.run(["task", "get", taskId, "--tenant", "acme", "--json"])).last).status).toBe("failed");

    const unknown = await cli.run(["approval", "approve", "00000000-0000-4000-8000-000000000000", "--tenant", "acme"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: NOT_FOUND: /);
    const wrongTenant = await cli.run(["approval", "approve", approvalId, "--tenant", "other"]);
    expect(wrongTenant.code).toBe(1);
    expect(wrongTenant.stderr).toMatch(/^error: NOT_FOUND: /);

    const badStatus = await cli.run(["approval", "list", "--tenant", "acme", "--status", "maybe"]);
    expect(badStatus.code).toBe(2);
    expect(badStatus.stderr).toMatch(/^error: INVALID_ARGUMENT: .*pending, approved, denied, all/);
  });
});
