/**
 * BUS_ROUTED off for a role: `ctx.delegate()` from it fails the turn with BUS_NOT_ROUTED and the step fails
 * with that code without retries. A2A_EGRESS_ENABLED off (the live flags are the engine's egress switch): a
 * foreign hop fails closed with an audited reason; switched on, the same hop is allowed.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isSwitchyardError } from "../../src/errors.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { putPolicy } from "../../src/governance/policy-store.js";
import type { Handler } from "../../src/harness/index.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { Workers } from "../support/workers.js";
import { finished, flip, submit } from "./support.js";

const ORG = "acme";

describe("BUS_ROUTED", () => {
  let rt: TestRuntime;
  let workers: Workers;
  const helperRuns: string[] = [];
  const caught: string[] = [];
  beforeEach(async () => {
    helperRuns.length = 0;
    caught.length = 0;
    rt = await createTestRuntime();
    workers = new Workers(rt);
    rt.startCoordinator();
    await submit(rt, ORG, `
name: ask
steps:
  - { id: ask, to: "role:asker", retries: 2, backoff: 100ms }
`);
    // Catches the refusal and tries to carry on: the turn must fail anyway.
    const asker: Handler = async (work, ctx) => {
      if (work.resume) return { answer: await ctx.readResult(work.resume.reply.resultRef) };
      try {
        return ctx.delegate("role:helper", { q: 1 });
      } catch (error) {
        caught.push(isSwitchyardError(error) ? error.code : String(error));
        return { fallback: true };
      }
    };
    workers.start("asker", asker);
    workers.start("helper", (work) => {
      helperRuns.push(work.taskId);
      return { a: 42 };
    });
  });
  afterEach(async () => {
    await workers.stop();
    await rt.cleanup();
  });

  it("off for the delegating role: the step fails BUS_NOT_ROUTED without retries; on again, delegation works", async () => {
    await flip(rt, "BUS_ROUTED", "role", "asker", false);
    await rt.flags.refresh();
    const refused = await rt.tasks.start({ orgId: ORG, workflow: "ask" });
    const failed = await finished(rt, ORG, refused.taskId);
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatchObject({ code: "BUS_NOT_ROUTED" });
    expect(failed.error!.message).toMatch(/BUS_ROUTED is off for role:asker/);
    expect(failed.steps).toMatchObject([{ id: "ask", status: "failed", attempts: 1, error: { code: "BUS_NOT_ROUTED" } }]);
    expect(caught).toEqual(["BUS_NOT_ROUTED"]);
    expect(helperRuns).toEqual([]);
    expect((await listAudit(rt.pool, ORG, { taskId: refused.taskId })).map((a) => `${a.action}:${a.verdict}`)).toEqual(["dispatch:allow", "result:failed"]);

    // Only the delegating role's route matters: the helper's route being off changes nothing for the asker.
    await flip(rt, "BUS_ROUTED", "role", "asker", true);
    await flip(rt, "BUS_ROUTED", "role", "helper", false);
    await rt.flags.refresh();
    const routed = await rt.tasks.start({ orgId: ORG, workflow: "ask" });
    const done = await finished(rt, ORG, routed.taskId);
    expect(done).toMatchObject({ status: "completed", steps: expect.arrayContaining([expect.objectContaining({ id: "ask", output: { answer: { a: 42 } } })]) });
    expect(helperRuns).toEqual([routed.taskId]);
  });
});

describe("A2A_EGRESS_ENABLED", () => {
  let rt: TestRuntime;
  beforeEach(async () => {
    // No `egress` override: the runtime's live flags are the engine's egress switch.
    rt = await createTestRuntime();
    await putPolicy(rt.stores.policies, rt.pool, ORG, { default: "allow", rules: [] });
    await submit(rt, ORG, `
name: outside
steps:
  - { id: ask, to: "foreign:weather" }
`);
  });
  afterEach(async () => {
    await rt.cleanup();
  });

  it("off for the tenant fails the foreign hop closed with an audited reason; switched on, the hop is allowed", async () => {
    await flip(rt, "A2A_EGRESS_ENABLED", "global", "", true);
    await flip(rt, "A2A_EGRESS_ENABLED", "tenant", ORG, false);
    await rt.flags.refresh();
    const denied = await rt.tasks.start({ orgId: ORG, workflow: "outside" });
    const task = await rt.tasks.get(ORG, denied.taskId);
    expect(task).toMatchObject({ status: "failed", error: { code: "POLICY_DENIED" } });
    const [hop] = await listAudit(rt.pool, ORG, { taskId: denied.taskId });
    expect(hop).toMatchObject({ action: "a2a_egress", verdict: "deny", rule: "builtin:egress-disabled", destination: "foreign:weather" });
    expect(hop!.reason).toMatch(/A2A_EGRESS_ENABLED/);

    await flip(rt, "A2A_EGRESS_ENABLED", "tenant", ORG, true);
    await rt.flags.refresh();
    const allowed = await rt.tasks.start({ orgId: ORG, workflow: "outside" });
    // Allowed by the switch and the policy, the hop reaches the ForeignDispatcher port (which refuses in this build).
    expect((await listAudit(rt.pool, ORG, { taskId: allowed.taskId })).map((a) => `${a.action}:${a.verdict}`)[0]).toBe("a2a_egress:allow");

    // The global master switch off denies again, whatever the tenant's value.
    await flip(rt, "A2A_EGRESS_ENABLED", "global", "", false);
    await rt.flags.refresh();
    const again = await rt.tasks.start({ orgId: ORG, workflow: "outside" });
    expect((await listAudit(rt.pool, ORG, { taskId: again.taskId }))[0]).toMatchObject({ verdict: "deny", rule: "builtin:egress-disabled" });
  });
});
