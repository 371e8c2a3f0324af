/**
 * "Nothing applied twice", from the audit table: every task completed, and per step one dispatch and one accepted
 * result (each step ran once: no timeouts or retries were needed), as fan-in-coordinators.test.ts checks.
 */
import { expect } from "vitest";
import type { Queryable } from "../../../src/store/db.js";

export async function checkExactlyOnce(db: Queryable, expected: { tasks: number; steps: number }): Promise<void> {
  const { rows: tasks } = await db.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM tasks GROUP BY status");
  expect(tasks, "tasks by status").toEqual([{ status: "completed", n: expected.tasks }]);
  const { rows: counts } = await db.query<{ action: string; verdict: string; n: number; steps: number }>(
    `SELECT action, verdict, count(*)::int AS n, count(DISTINCT (task_id, step_id))::int AS steps
     FROM audit_log WHERE action IN ('dispatch', 'result', 'timeout', 'repair') GROUP BY action, verdict ORDER BY action, verdict`,
  );
  const total = expected.tasks * expected.steps;
  expect(counts, "dispatch and result rows per step").toEqual([
    { action: "dispatch", verdict: "allow", n: total, steps: total },
    { action: "result", verdict: "accepted", n: total, steps: total },
  ]);
  const { rows: attempts } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM steps WHERE attempt <> 1 OR status <> 'completed'");
  expect(attempts[0]!.n, "steps not completed at their first attempt").toBe(0);
}
