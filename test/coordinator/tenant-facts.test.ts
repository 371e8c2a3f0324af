/**
 * The tenant facts a batch decides on (daily cost, daily budget, idempotent foreign agents) ride on the locked
 * read of the batch's tasks: no round trip of their own, nothing cached, and the cost is read once the task locks
 * are held — so it includes what a transaction the batch waited for accrued.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { costDay } from "../../src/domain.js";
import { loadTasksForUpdate } from "../../src/store/engine/postgres-task-store.js";
import { accrueDailyCost, createTenantFactsSource } from "../../src/store/engine/postgres-tenant-facts.js";
import type { Queryable } from "../../src/store/db.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { waitForProgress } from "../support/wait.js";

const DAY_MS = 24 * 60 * 60 * 1000;
let db: TestDatabase;
const now = Date.now();
const today = costDay(now);
const yesterday = costDay(now - DAY_MS);

async function newTask(orgId: string): Promise<string> {
  const id = randomUUID();
  await db.pool.query(`INSERT INTO tasks (id, org_id, workflow_name, workflow_version, input, status) VALUES ($1, $2, 'w', 1, '{}', 'running')`, [id, orgId]);
  return id;
}

/** Counts the statements sent through it. */
function counting(client: Queryable): { client: Queryable; statements: () => number } {
  let statements = 0;
  const counted = {
    query: (...args: unknown[]) => {
      statements += 1;
      return (client.query as (...a: unknown[]) => unknown)(...args);
    },
  } as unknown as Queryable;
  return { client: counted, statements: () => statements };
}

beforeAll(async () => {
  db = await createTestDatabase();
  for (const org of ["acme", "globex"]) await submitWorkflow(db.pool, org, parseWorkflowDefinition('name: w\nsteps:\n  - { id: a, to: "role:w" }\n'));
  await db.pool.query(`INSERT INTO tenants (org_id, name, daily_budget) VALUES ('acme', 'Acme', 10)`);
  await db.pool.query(`INSERT INTO tenant_daily_cost (org_id, day, cost) VALUES ('acme', $1, 2.5), ('acme', $2, 7)`, [today, yesterday]);
  await db.pool.query(
    `INSERT INTO foreign_agents (org_id, agent_key, base_url, allow_host, idempotent) VALUES
       ('acme', 'b-once', 'https://a.example', 'a.example', false), ('acme', 'a-again', 'https://a.example', 'a.example', true)`,
  );
});

afterAll(async () => {
  await db?.drop();
});

describe("the locked read of a batch's tasks", () => {
  it("carries each tenant's stored facts for the day, without a statement of its own", async () => {
    const tasks = [await newTask("acme"), await newTask("globex")];
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      const { client: counted, statements } = counting(client);
      const loaded = await loadTasksForUpdate(counted, tasks, { orgIds: ["acme", "globex"], day: today });
      await client.query("COMMIT");
      expect(statements()).toBe(2); // the lock, then the read: nothing more than before the facts rode along
      expect(loaded.tasks.size).toBe(2);
      expect(loaded.tenantFacts.get("acme")).toEqual({ day: today, dailyCost: 2.5, dailyBudget: 10, idempotentForeignAgents: ["a-again"] });
      // No tenant row, no cost today, no agents: the defaults.
      expect(loaded.tenantFacts.get("globex")).toEqual({ day: today, dailyCost: 0, dailyBudget: null, idempotentForeignAgents: [] });
    } finally {
      client.release();
    }
  });

  it("reads the cost once the task locks are held: it includes what the transaction it waited for accrued", async () => {
    const task = await newTask("acme");
    const holder = await db.pool.connect();
    const waiter = await db.pool.connect();
    try {
      const { rows: before } = await db.pool.query<{ cost: number }>(`SELECT cost FROM tenant_daily_cost WHERE org_id = 'acme' AND day = $1`, [today]);
      await holder.query("BEGIN");
      await holder.query("SELECT id FROM tasks WHERE id = $1 FOR UPDATE", [task]);
      await accrueDailyCost(holder, new Map([["acme", 1.25]]), now);
      await waiter.query("BEGIN");
      const { rows: pid } = await waiter.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
      const loading = loadTasksForUpdate(waiter, [task], { orgIds: ["acme"], day: today });
      await waitForProgress({
        what: "the second transaction to wait on the task lock",
        progress: async () => (await db.pool.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", [pid[0]!.pid])).rowCount,
        done: (waiting) => waiting === 1,
        intervalMs: 10,
      });
      await holder.query("COMMIT");
      const loaded = await loading;
      await waiter.query("COMMIT");
      expect(loaded.tenantFacts.get("acme")?.dailyCost).toBe(before[0]!.cost + 1.25);
    } finally {
      holder.release();
      waiter.release();
    }
  });

  it("carries nothing when no task is found (and is not asked for facts then)", async () => {
    const loaded = await loadTasksForUpdate(db.pool, [randomUUID()], { orgIds: ["acme"], day: today });
    expect(loaded.tasks.size).toBe(0);
    expect(loaded.tenantFacts.size).toBe(0);
  });
});

describe("the tenant facts source", () => {
  it("uses the facts the batch read for today, and reads them itself for another day (a batch across midnight)", async () => {
    const source = createTenantFactsSource();
    const stored = { day: today, dailyCost: 4, dailyBudget: 5, idempotentForeignAgents: ["x"] };
    const { client, statements } = counting(db.pool);
    const facts = await source.get("acme", client, now, stored);
    expect(statements()).toBe(0);
    expect(facts).toMatchObject({ dailyCost: 4, dailyBudget: 5, egressEnabled: false, replyEnabled: false });
    expect([...facts.idempotentForeignAgents!]).toEqual(["x"]);

    const stale = { ...stored, day: yesterday };
    const read = await source.get("acme", client, now, stale);
    expect(statements()).toBe(1);
    const { rows } = await db.pool.query<{ cost: number }>(`SELECT cost FROM tenant_daily_cost WHERE org_id = 'acme' AND day = $1`, [today]);
    expect(read).toMatchObject({ dailyCost: rows[0]!.cost, dailyBudget: 10 });
    expect([...read.idempotentForeignAgents!]).toEqual(["a-again"]);
  });

  it("reads a tenant without stored facts in one statement, with the defaults for what is missing", async () => {
    const { client, statements } = counting(db.pool);
    const facts = await createTenantFactsSource({ egress: { egressEnabled: () => true } }).get("initech", client, now);
    expect(statements()).toBe(1);
    expect(facts).toMatchObject({ dailyCost: 0, dailyBudget: null, egressEnabled: true });
    expect(facts.idempotentForeignAgents?.size).toBe(0);
  });
});
