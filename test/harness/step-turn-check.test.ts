import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HARNESS_GROUP } from "../../src/harness/harness.js";
import type { TurnRef } from "../../src/harness/turn-check.js";
import { createStepTurnCheck } from "../../src/store/step-turn-check.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";
import { createBusFixture, waitFor, workEnvelope } from "./fixtures.js";

let db: TestDatabase;
const taskA = randomUUID();
const taskB = randomUUID();

async function insertTask(orgId: string, taskId: string): Promise<void> {
  await db.pool.query(
    `INSERT INTO workflows (org_id, name, version, definition, digest) VALUES ($1, 'wf', 1, '{}', 'd') ON CONFLICT DO NOTHING`,
    [orgId],
  );
  await db.pool.query(
    `INSERT INTO tasks (id, org_id, workflow_name, workflow_version, input, status) VALUES ($1, $2, 'wf', 1, '{}', 'running')`,
    [taskId, orgId],
  );
}

async function insertStep(orgId: string, taskId: string, stepId: string, status: string, attempt: number, turns: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO steps (task_id, step_id, org_id, kind, status, destination, attempt, turns) VALUES ($1, $2, $3, 'workflow', $4, 'role:writer', $5, $6)`,
    [taskId, stepId, orgId, status, attempt, turns],
  );
}

beforeAll(async () => {
  db = await createTestDatabase();
  await insertTask("org-a", taskA);
  await insertTask("org-b", taskB);
  // A step whose turn 3 of attempt 2 is running; one waiting for replies after its turn 1 stood down; one done.
  await insertStep("org-a", taskA, "gather", "dispatched", 2, 3);
  await insertStep("org-a", taskA, "waiting", "waiting", 1, 2);
  await insertStep("org-a", taskA, "done", "completed", 1, 0);
  await insertStep("org-b", taskB, "gather", "dispatched", 1, 0);
});
afterAll(async () => {
  await db?.drop();
});

describe("step turn check (Postgres)", () => {
  const check = () => createStepTurnCheck({ db: db.pool });
  const ref = (fields: Partial<TurnRef>): TurnRef => ({ orgId: "org-a", taskId: taskA, stepId: "gather", attempt: 2, turn: 3, ...fields });

  it("says current only for the dispatched step's own attempt and turn", async () => {
    await expect(check().isCurrent(ref({}))).resolves.toBe(true);
    await expect(check().isCurrent(ref({ turn: 2 })), "an earlier turn that stood down").resolves.toBe(false);
    await expect(check().isCurrent(ref({ attempt: 1 })), "an earlier attempt").resolves.toBe(false);
  });

  it("says not current once the step waits for replies or has finished", async () => {
    await expect(check().isCurrent(ref({ stepId: "waiting", attempt: 1, turn: 1 }))).resolves.toBe(false);
    await expect(check().isCurrent(ref({ stepId: "waiting", attempt: 1, turn: 2 }))).resolves.toBe(false);
    await expect(check().isCurrent(ref({ stepId: "done", attempt: 1, turn: 0 }))).resolves.toBe(false);
  });

  it("leaves the decision to the coordinator (current) for a step it cannot find, another tenant's included", async () => {
    await expect(check().isCurrent(ref({ stepId: "missing" }))).resolves.toBe(true);
    await expect(check().isCurrent(ref({ taskId: randomUUID() }))).resolves.toBe(true);
    await expect(check().isCurrent(ref({ taskId: "not-a-uuid" }))).resolves.toBe(true);
    // org-b's step exists and runs turn 0 of attempt 1, but asked as org-a it is not there to be judged.
    await expect(check().isCurrent({ orgId: "org-a", taskId: taskB, stepId: "gather", attempt: 1, turn: 0 })).resolves.toBe(true);
    await expect(check().isCurrent({ orgId: "org-b", taskId: taskB, stepId: "gather", attempt: 5, turn: 0 })).resolves.toBe(false);
  });

  it("keeps a harness from re-running a reclaimed WORK whose step has moved on (Redis and Postgres both real)", async () => {
    const fx = await createBusFixture();
    try {
      const stale = workEnvelope({ orgId: "org-a", taskId: taskA, stepId: "waiting", attempt: 1, turn: 1 });
      await fx.bus.ensureGroup("role:writer", HARNESS_GROUP);
      await fx.publish("role:writer", stale);
      // Taken by a worker that published its QUERY and died before acknowledging.
      await fx.bus.read({ stream: "role:writer", group: HARNESS_GROUP, consumer: "killed-worker", count: 1, blockMs: 0 });
      let ran = 0;
      const harness = fx.harness({
        reclaimIdleMs: 100,
        heartbeatMs: 20,
        turnCheck: createStepTurnCheck({ db: db.pool }),
        handler: () => {
          ran += 1;
          return "again";
        },
      });
      const running = harness.start();
      await waitFor(() => harness.stats.stale === 1, 5_000, "the stale WORK to be skipped");
      await waitFor(async () => (await fx.bus.stats("role:writer", HARNESS_GROUP)).pending === 0, 5_000, "the stale WORK to be acked");
      await harness.close();
      await running;
      expect(ran).toBe(0);
    } finally {
      await fx.cleanup();
    }
  });
});
