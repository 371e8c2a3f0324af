/**
 * Concurrency keys (issue 15): `concurrency: { key: task.input.customerId, limit: 2 }` isolates a tenant's own
 * customers — one customer's backlog never holds more than 2 steps in flight, and another customer of the same
 * tenant is served at once. Real Redis, Postgres, two coordinators and a harness; no operator limits are set (a key
 * works without them).
 */
import { afterEach, describe, expect, it } from "vitest";
import { concurrencyGroupOf } from "../../src/core/concurrency-key.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";
import { waitForTasks } from "../support/wait.js";
import { Workers } from "../support/workers.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HANDLER_MS = 80;
const WORKFLOW = `
name: per-customer
steps:
  - { id: fetch, to: "role:crm", timeout: 120s, concurrency: { key: task.input.customerId, limit: 2 } }
  - { id: write, to: "role:crm", timeout: 120s, concurrency: { key: task.input.customerId, limit: 2 } }
`;

describe("concurrency keys: the key's value and the workflow file", () => {
  const step = parseWorkflowDefinition(WORKFLOW).steps[0]!;

  it("reads the path from the task input; no value there means no key", () => {
    expect(concurrencyGroupOf(step, { customerId: "c-42" })).toEqual({ key: 'task.input.customerId="c-42"', limit: 2 });
    expect(concurrencyGroupOf(step, { customerId: 7 })).toEqual({ key: "task.input.customerId=7", limit: 2 });
    expect(concurrencyGroupOf(step, { other: 1 })).toBeUndefined();
    expect(concurrencyGroupOf(step, { customerId: null })).toBeUndefined();
    expect(concurrencyGroupOf(step, "not an object")).toBeUndefined();
    const nested = parseWorkflowDefinition(`name: n\nsteps:\n  - { id: a, to: "role:x", concurrency: { key: task.input.customer.id, limit: 1 } }\n`).steps[0]!;
    expect(concurrencyGroupOf(nested, { customer: { id: "k" } })?.key).toBe('task.input.customer.id="k"');
    // Equal values are one key whatever the order of their fields; a long value is kept as its digest.
    expect(concurrencyGroupOf(nested, { customer: { id: { b: 1, a: 2 } } })?.key).toBe(concurrencyGroupOf(nested, { customer: { id: { a: 2, b: 1 } } })?.key);
    expect(concurrencyGroupOf(nested, { customer: { id: "x".repeat(500) } })?.key).toMatch(/^task\.input\.customer\.id=sha256:[0-9a-f]{64}$/);
  });

  it("refuses a key that is not a path into the task input, a bad limit and unknown fields, naming each", () => {
    const bad = `name: n
steps:
  - { id: a, to: "role:x", concurrency: { key: "input.customerId", limit: 2 } }
  - { id: b, to: "role:x", concurrency: { key: task.input.customerId, limit: 0 } }
  - { id: c, to: "role:x", concurrency: { key: task.input.customerId, limit: 2, scope: fn } }
  - { id: d, to: "role:x", concurrency: task.input.customerId }
  - { id: e, to: "role:x", concurrency_key: task.input.customerId }
`;
    let problems: Array<{ path: string; reason: string }> = [];
    try {
      parseWorkflowDefinition(bad);
    } catch (error) {
      problems = (error as { details: { errors: Array<{ path: string; reason: string }> } }).details.errors;
    }
    expect(problems.map((p) => p.path)).toEqual(["steps[0].concurrency.key", "steps[1].concurrency.limit", "steps[2].concurrency.scope", "steps[3].concurrency", "steps[4].concurrency_key"]);
    expect(problems[0]!.reason).toContain("task.input.customerId");
    expect(problems[4]!.reason).toContain("concurrency");
  });
});

describe("concurrency keys end to end", () => {
  let rt: TestRuntime | undefined;
  let workers: Workers | undefined;

  afterEach(async () => {
    await workers?.stop();
    await rt?.cleanup();
    rt = undefined;
  });

  it("one customer's backlog never has more than 2 steps in flight, and another customer of the tenant goes at once", async () => {
    rt = await createTestRuntime();
    await submitWorkflow(rt.pool, "acme", parseWorkflowDefinition(WORKFLOW));
    rt.startCoordinator();
    await rt.startSeparateCoordinator("test-second");

    const running = new Map<string, number>();
    const peaks = new Map<string, number>();
    workers = new Workers(rt);
    workers.start("crm", async (work) => {
      const customer = (work.input as { task: { customerId: string } }).task.customerId;
      const now = (running.get(customer) ?? 0) + 1;
      running.set(customer, now);
      peaks.set(customer, Math.max(peaks.get(customer) ?? 0, now));
      await sleep(HANDLER_MS);
      running.set(customer, running.get(customer)! - 1);
      return { ok: true };
    }, { concurrency: 12 });

    // The big customer's 10 tasks first (inline starts: the task service's engine admits them too), then a small one's 2.
    const big = (await rt.tasks.startMany("acme", Array.from({ length: 10 }, () => ({ orgId: "acme", workflow: "per-customer", input: { customerId: "big" } })))).map((t) => t.taskId);
    const small = (await rt.tasks.startMany("acme", Array.from({ length: 2 }, () => ({ orgId: "acme", workflow: "per-customer", input: { customerId: "small" } })))).map((t) => t.taskId);
    const view = await rt.tasks.get("acme", big[9]!);
    expect(view.steps[0]).toMatchObject({ status: "held", queuedReason: expect.stringContaining('concurrency key task.input.customerId="big"') });
    await waitForTasks(rt.pool, { intervalMs: 50 });

    const { rows: statuses } = await rt.pool.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM tasks GROUP BY status");
    expect(statuses).toEqual([{ status: "completed", n: 12 }]);
    // From the handlers' side and from the audit chain (dispatches and results in commit order).
    expect(peaks.get("big")).toBe(2);
    expect(peaks.get("small")).toBe(2);
    const { rows } = await rt.pool.query<{ action: string; task_id: string }>(
      `SELECT action, task_id FROM audit_log WHERE org_id = 'acme' AND ((action = 'dispatch' AND verdict = 'allow') OR action = 'result') ORDER BY seq`,
    );
    let inFlight = 0;
    let peak = 0;
    const bigTasks = new Set(big);
    for (const row of rows) {
      if (!bigTasks.has(row.task_id)) continue;
      inFlight += row.action === "dispatch" ? 1 : -1;
      peak = Math.max(peak, inFlight);
    }
    expect(rows.filter((r) => r.action === "dispatch")).toHaveLength(24);
    expect(peak).toBe(2);

    // The small customer was not queued behind the big one: both its tasks (2 steps each) finished while most of
    // the big customer's 20 steps, 2 at a time, still waited.
    const finished = async (ids: string[]) =>
      (await rt!.pool.query<{ at: string }>("SELECT (extract(epoch FROM finished_at) * 1000)::bigint AS at FROM tasks WHERE id = ANY($1::uuid[]) ORDER BY finished_at", [ids])).rows.map((r) => Number(r.at));
    const smallDone = (await finished(small)).at(-1)!;
    const bigDone = await finished(big);
    expect(bigDone.filter((at) => at <= smallDone).length).toBeLessThanOrEqual(3);
    const { rows: held } = await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM held_steps");
    expect(held[0]!.n).toBe(0);
  });
});
