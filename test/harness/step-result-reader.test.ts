import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { formatStepResultRef, parseStepResultRef } from "../../src/harness/result-reader.js";
import { createStepResultReader } from "../../src/store/step-result-reader.js";
import { createTestDatabase, type TestDatabase } from "../support/db.js";

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

async function insertStep(orgId: string, taskId: string, stepId: string, status: string, output: unknown): Promise<void> {
  await db.pool.query(
    `INSERT INTO steps (task_id, step_id, org_id, kind, status, destination, output) VALUES ($1, $2, $3, 'delegation', $4, 'role:analyst', $5)`,
    [taskId, stepId, orgId, status, output === undefined ? null : JSON.stringify(output)],
  );
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchyardError);
    return (error as SwitchyardError).code;
  }
  throw new Error("expected the read to fail");
}

beforeAll(async () => {
  db = await createTestDatabase();
  await insertTask("org-a", taskA);
  await insertTask("org-b", taskB);
  await insertStep("org-a", taskA, "research/d1", "completed", { summary: "moon", points: [1, 2] });
  await insertStep("org-a", taskA, "research/d2", "dispatched", undefined);
  await insertStep("org-a", taskA, "nothing", "completed", undefined);
  await insertStep("org-b", taskB, "research/d1", "completed", { secret: "b's" });
});
afterAll(async () => {
  await db?.drop();
});

describe("step result reader (Postgres)", () => {
  const reader = () => createStepResultReader({ db: db.pool });

  it("reads a completed step's output by reference, step ids with slashes included", async () => {
    const ref = formatStepResultRef({ taskId: taskA, stepId: "research/d1" });
    expect(ref).toBe(`step:${taskA}/research/d1`);
    expect(parseStepResultRef(ref)).toEqual({ taskId: taskA, stepId: "research/d1" });
    await expect(reader().read("org-a", ref)).resolves.toEqual({ summary: "moon", points: [1, 2] });
  });

  it("returns null for a completed step without output", async () => {
    await expect(reader().read("org-a", `step:${taskA}/nothing`)).resolves.toBeNull();
  });

  it("never reads another tenant's result: NOT_FOUND, whichever way round", async () => {
    expect(await codeOf(reader().read("org-b", `step:${taskA}/research/d1`))).toBe(ErrorCode.NotFound);
    expect(await codeOf(reader().read("org-a", `step:${taskB}/research/d1`))).toBe(ErrorCode.NotFound);
    await expect(reader().read("org-b", `step:${taskB}/research/d1`)).resolves.toEqual({ secret: "b's" });
  });

  it("treats a step that has not completed, an unknown step and a non-uuid task as NOT_FOUND", async () => {
    expect(await codeOf(reader().read("org-a", `step:${taskA}/research/d2`))).toBe(ErrorCode.NotFound);
    expect(await codeOf(reader().read("org-a", `step:${taskA}/missing`))).toBe(ErrorCode.NotFound);
    expect(await codeOf(reader().read("org-a", "step:not-a-uuid/research/d1"))).toBe(ErrorCode.NotFound);
  });

  it("rejects text that is not a step reference with INVALID_ARGUMENT", async () => {
    for (const ref of ["", "research/d1", `task:${taskA}/x`, `step:${taskA}`, `step:${taskA}/`, "step:/x"]) {
      expect(await codeOf(reader().read("org-a", ref)), ref).toBe(ErrorCode.InvalidArgument);
    }
  });
});
