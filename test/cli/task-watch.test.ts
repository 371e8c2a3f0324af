/**
 * `task start --wait` and `task watch` say why a task does not move, each explanation from a real stalled task:
 * a role nobody reads with HARNESS_ENABLED off for it, a step parked on an approval, a tenant held by
 * COORDINATOR_ENABLED. No coordinator or harness runs here, so tasks stay where their first decision put them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APPROVAL_WORKFLOW, createCliEnvironment, ONE_STEP_WORKFLOW, type CliEnvironment } from "./helpers.js";

let cli: CliEnvironment;
beforeAll(async () => {
  cli = await createCliEnvironment({ tenants: ["acme", "held"] });
  const oneStep = await cli.file("one.yaml", ONE_STEP_WORKFLOW);
  const approval = await cli.file("approval.yaml", APPROVAL_WORKFLOW);
  for (const tenant of ["acme", "held"]) for (const file of [oneStep, approval]) expect((await cli.run(["workflow", "submit", file, "--tenant", tenant])).code).toBe(0);
});
afterAll(async () => {
  await cli?.cleanup();
});

describe("stall explanations", () => {
  it("--wait on a role nobody reads, switched off, says so before TIMEOUT instead of only the attempts", async () => {
    expect((await cli.run(["flags", "set", "HARNESS_ENABLED", "off", "--role", "echo", "--reason", "test"])).code).toBe(0);
    try {
      const run = await cli.run(["task", "start", "one-step", "--tenant", "acme", "--wait", "--timeout", "3", "--explain-after", "1"]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^error: TIMEOUT: task .* is still running after 3 s/);
      expect(run.stdout).toContain("step only (role:echo): dispatched, attempt 1");
      expect(run.stdout).toMatch(/no change for \d+ s:\n  step only: no harness has ever read role:echo; HARNESS_ENABLED is off for role:echo \(flags table\)\n/);
      // Said once, not at every poll.
      expect(run.stdout.match(/no harness has ever read/g)).toHaveLength(1);
    } finally {
      await cli.run(["flags", "set", "HARNESS_ENABLED", "on", "--role", "echo", "--reason", "test"]);
    }
  });

  it("a timeout shorter than --explain-after still ends with the reason", async () => {
    const run = await cli.run(["task", "start", "one-step", "--tenant", "acme", "--wait", "--timeout", "1"]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/\n  step only: no harness has ever read role:echo\n/);
    expect(run.stdout).not.toContain("HARNESS_ENABLED");
  });

  it("task watch names the approval a step is parked on, with its rule", async () => {
    const started = await cli.run(["task", "start", "needs-approval", "--tenant", "acme"]);
    const taskId = started.last;
    const approvals = JSON.parse((await cli.run(["approval", "list", "--tenant", "acme", "--task", taskId, "--json"])).last) as { approvals: Array<{ id: string; rule: string }> } | Array<{ id: string; rule: string }>;
    const approval = (Array.isArray(approvals) ? approvals : approvals.approvals)[0]!;
    const watched = await cli.run(["task", "watch", taskId, "--tenant", "acme", "--timeout", "2.5", "--explain-after", "1"]);
    expect(watched.code).toBe(1);
    expect(watched.stdout).toContain(`step ship: parked on approval ${approval.id} (rule ${approval.rule}: `);
    const hint = /decide with `switchyard (approval approve)\|deny ([^`]+)`/.exec(watched.stdout);
    expect(hint, watched.stdout).not.toBeNull();
    // The printed command works as pasted (here: its approve form).
    const pasted = await cli.run([...hint![1]!.split(" "), ...hint![2]!.split(" "), "--reason", "test"]);
    expect(pasted.code, pasted.stderr).toBe(0);
    expect(hint![2]).toBe(`${approval.id} --tenant acme`);
  });

  it("task watch says a tenant is held by COORDINATOR_ENABLED, and ends at once (exit 1) once the task is cancelled", async () => {
    const started = await cli.run(["task", "start", "one-step", "--tenant", "held"]);
    const taskId = started.last;
    expect((await cli.run(["flags", "set", "COORDINATOR_ENABLED", "off", "--tenant", "held", "--reason", "test"])).code).toBe(0);
    const held = await cli.run(["task", "watch", taskId, "--tenant", "held", "--timeout", "2.5", "--explain-after", "1", "--json"]);
    expect(held.code).toBe(1);
    expect(held.stderr).toContain("held: COORDINATOR_ENABLED is off for tenant held (flags table); the coordinator applies nothing for this tenant until it is on");
    expect(JSON.parse(held.stdout.trim().split("\n").at(-1)!).error.code).toBe("TIMEOUT");
    // A finished task ends the watch at once.
    expect((await cli.run(["task", "cancel", taskId, "--tenant", "held"])).code).toBe(0);
    const finished = await cli.run(["task", "watch", taskId, "--tenant", "held", "--json"]);
    expect(finished.code).toBe(1);
    expect(JSON.parse(finished.last).status).toBe("cancelled");
  });

  it("task watch names the foreign agent a step waits on, with its bridge and last state", async () => {
    const egress = { SWITCHYARD_A2A_EGRESS_ENABLED: "true", SWITCHYARD_A2A_EGRESS_TENANTS: "*" };
    expect((await cli.run(["foreign", "register", "weather", "--tenant", "acme", "--url", "https://weather.example.com:8443/a2a", "--skill", "forecast"])).code).toBe(0);
    const flow = await cli.file("foreign.yaml", "name: ask-weather\nsteps:\n  - { id: ask, to: \"foreign:weather\" }\n");
    expect((await cli.run(["workflow", "submit", flow, "--tenant", "acme"])).code).toBe(0);
    // No coordinator runs the A2A sender here, so the bridge stays where dispatch left it.
    const started = await cli.run(["task", "start", "ask-weather", "--tenant", "acme"], { env: egress });
    const bridge = await cli.db.pool.query<{ id: string; status: string }>("SELECT id, status FROM a2a_bridge WHERE task_id = $1", [started.last]);
    expect(bridge.rows).toHaveLength(1);
    const watched = await cli.run(["task", "watch", started.last, "--tenant", "acme", "--timeout", "2.5", "--explain-after", "1"], { env: egress });
    expect(watched.code).toBe(1);
    expect(watched.stdout).toMatch(new RegExp(`  step ask: waiting on foreign:weather \\(bridge ${bridge.rows[0]!.id}, last state ${bridge.rows[0]!.status}, for \\d+ s\\)\n`));
  });
});
