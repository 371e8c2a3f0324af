/**
 * Two engines (two runtimes, as two coordinators would have) on one database, applying the same task's events
 * under interleavings chosen by fast-check. The interleaving that matters is made deterministic: engine A applies
 * its event inside an open transaction, engine B starts its own and is seen WAITING on A's locks, then A commits.
 * Under READ COMMITTED, B must decide on the state A committed, not on what it saw before it waited: a stale read
 * there stranded fan-in steps (each coordinator saw the other branch unfinished) and applied a timeout twice.
 *
 * The model is the workflow's own rules, checked on what was written: every task can always be driven to a
 * close (nothing stranded), each step attempt is dispatched once and ends once (one accepted result or one
 * timeout, never both, never twice), and the audit chain verifies.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EngineInput } from "../../src/coordinator/engine.js";
import { createRuntime, type Runtime } from "../../src/runtime.js";
import type { PoolClient } from "../../src/store/db.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { verifyChain } from "../../src/governance/audit-verify.js";
import { createTestRuntime, type TestRuntime } from "../support/runtime.js";

const ORG = "acme";
const TIMEOUT_MS = 60_000;

interface Shape {
  width: number;
  tail: boolean;
  retries: number;
}

function workflowYaml(name: string, shape: Shape): string {
  const branches = Array.from({ length: shape.width }, (_, i) => `b${i}`);
  const lines = [`name: ${name}`, "steps:", `  - { id: a, to: "role:w", timeout: ${TIMEOUT_MS}ms }`];
  for (const b of branches) lines.push(`  - { id: ${b}, to: "role:w", needs: [a], retries: ${shape.retries}, backoff: 1ms, timeout: ${TIMEOUT_MS}ms }`);
  lines.push(`  - { id: join, to: "role:w", needs: [${branches.join(", ")}], timeout: ${TIMEOUT_MS}ms }`);
  if (shape.tail) lines.push(`  - { id: tail, to: "role:w", needs: [join], timeout: ${TIMEOUT_MS}ms }`);
  return lines.join("\n") + "\n";
}

interface StepRow {
  step_id: string;
  status: string;
  attempt: number;
  due_at_ms: string | null;
}

describe("two engines on one database, interleaved", () => {
  let rt: TestRuntime;
  let other: Runtime;
  // Both engines read this clock, so a timeout can be made due without waiting for it.
  let now = Date.now();

  beforeAll(async () => {
    rt = await createTestRuntime({ clock: () => now });
    other = await createRuntime(rt.config, { clock: () => now });
  });
  afterAll(async () => {
    await other?.close();
    await rt?.cleanup();
  });

  async function steps(taskId: string): Promise<StepRow[]> {
    const { rows } = await rt.pool.query<StepRow>("SELECT step_id, status, attempt, due_at_ms FROM steps WHERE task_id = $1 ORDER BY step_id", [taskId]);
    return rows;
  }

  /** What could happen next to the task: a worker's result or a timeout for each attempt in flight, a retry that is due. */
  function candidates(taskId: string, rows: StepRow[]): EngineInput[] {
    const out: EngineInput[] = [];
    for (const s of rows) {
      if (s.status === "dispatched") {
        const eventId = `result:${taskId}:${s.step_id}:${s.attempt}`;
        out.push({
          orgId: ORG,
          taskId,
          dedupe: true,
          event: { type: "result", eventId, stepId: s.step_id, attempt: s.attempt, sender: { kind: "queue", endpoint: "role:w" }, ok: true, output: { s: s.step_id }, error: null, cost: 1, payloadHash: "" },
        });
      }
      if ((s.status === "dispatched" || s.status === "retrying") && s.due_at_ms !== null) {
        const eventId = `due:${taskId}:${s.step_id}:${s.attempt}:${s.due_at_ms}`;
        out.push({ orgId: ORG, taskId, dedupe: true, event: { type: "step_due", eventId, stepId: s.step_id, attempt: s.attempt } });
      }
    }
    return out;
  }

  async function backendPid(client: PoolClient): Promise<number> {
    const { rows } = await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    return rows[0]!.pid;
  }

  /** A applies in an open transaction; B starts and is seen waiting on a lock; A commits; then B finishes. */
  async function overlapped(first: EngineInput, second: EngineInput): Promise<void> {
    const a = await rt.pool.connect();
    const b = await other.pool.connect();
    try {
      const bPid = await backendPid(b);
      await a.query("BEGIN");
      await rt.engine.applyInTransaction(a, [first]);
      await b.query("BEGIN");
      const pending = other.engine.applyInTransaction(b, [second]);
      pending.catch(() => {});
      for (let i = 0; i < 200; i++) {
        const { rows } = await rt.pool.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", [bPid]);
        if (rows.length > 0) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      await a.query("COMMIT");
      await pending;
      await b.query("COMMIT");
    } catch (error) {
      await a.query("ROLLBACK").catch(() => {});
      await b.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      a.release();
      b.release();
    }
  }

  /** Makes every timeout in `input` due by moving the shared clock past it. */
  function makeDue(rows: StepRow[], input: EngineInput): void {
    if (input.event.type !== "step_due") return;
    const stepId = input.event.stepId;
    const due = Number(rows.find((r) => r.step_id === stepId)?.due_at_ms ?? 0);
    if (due > now) now = due;
  }

  it("never strands a fan-in, doubles a transition or forks the chain", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({ width: fc.integer({ min: 2, max: 4 }), tail: fc.boolean(), retries: fc.integer({ min: 0, max: 1 }) }),
        fc.array(fc.tuple(fc.nat(), fc.nat(), fc.nat()), { minLength: 4, maxLength: 24 }),
        async (shape, schedule) => {
          const name = `fan-${run++}`;
          await submitWorkflow(rt.pool, ORG, parseWorkflowDefinition(workflowYaml(name, shape)));
          const { taskId } = await rt.tasks.start({ orgId: ORG, workflow: name });

          for (const [mode, i, j] of schedule) {
            const rows = await steps(taskId);
            const next = candidates(taskId, rows);
            if (next.length === 0) break;
            const first = next[i % next.length]!;
            const second = next[j % next.length]!;
            makeDue(rows, first);
            makeDue(rows, second);
            if (mode % 3 === 0) await rt.engine.apply(rt.pool, [first]);
            else await overlapped(first, second);
          }

          // Drain: results only, one at a time, until nothing is in flight. A stranded step stops this short.
          for (let guard = 0; guard < 50; guard++) {
            const rows = await steps(taskId);
            const results = candidates(taskId, rows).filter((c) => c.event.type === "result");
            const retrying = rows.filter((s) => s.status === "retrying");
            if (results.length === 0 && retrying.length === 0) break;
            if (results.length > 0) await other.engine.apply(other.pool, [results[0]!]);
            else {
              const due = candidates(taskId, retrying)[0]!;
              makeDue(retrying, due);
              await rt.engine.apply(rt.pool, [due]);
            }
          }

          const final = await steps(taskId);
          const { rows: taskRows } = await rt.pool.query<{ status: string }>("SELECT status FROM tasks WHERE id = $1", [taskId]);
          const status = taskRows[0]!.status;
          const describeState = `task ${status}; steps ${final.map((s) => `${s.step_id}=${s.status}#${s.attempt}`).join(" ")}`;
          // Nothing in flight any more, so the task must have closed: completed, or failed after a step ran out of tries.
          expect(status, describeState).not.toBe("running");
          if (status === "completed") expect(final.every((s) => s.status === "completed"), describeState).toBe(true);
          else expect(final.some((s) => s.status === "failed"), describeState).toBe(true);

          // Per step attempt: one dispatch, and one ending (an accepted result or a timeout), never both or twice.
          const { rows: audit } = await rt.pool.query<{ action: string; step_id: string; n: number }>(
            `SELECT action, step_id, count(*)::int AS n FROM audit_log WHERE task_id = $1 GROUP BY action, step_id`,
            [taskId],
          );
          const count = (action: string, stepId: string) => audit.find((r) => r.action === action && r.step_id === stepId)?.n ?? 0;
          for (const s of final) {
            if (s.status === "pending" || s.status === "cancelled") continue;
            expect(count("dispatch", s.step_id), `dispatches of ${s.step_id}; ${describeState}`).toBe(s.attempt);
            const endings = count("result", s.step_id) + count("timeout", s.step_id);
            expect(endings, `results + timeouts of ${s.step_id}; ${describeState}`).toBe(s.attempt);
            expect(count("result", s.step_id), `results of ${s.step_id}`).toBe(s.status === "completed" ? 1 : 0);
          }
          expect(count("repair", "join") + count("repair", "tail"), "no repair was needed").toBe(0);
        },
      ),
      { numRuns: 30 },
    );
    expect((await verifyChain(rt.stores.audit, rt.pool, ORG)).ok).toBe(true);
  }, 240_000);
});
