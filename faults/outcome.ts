/**
 * What the run ended with, read from the suite's database once the system has settled: tasks by status, the
 * unfinished ("stuck") tasks with their step states grouped by shape, the tasks the API started against those in
 * the database (a second task for one idempotency key would be a doubled start), and `switchyard audit verify`
 * for every tenant, run as the CLI an SRE would use.
 */
import { runCliCommand } from "../test/support/processes.js";
import type { AuditRow, StepRow } from "./audit-checks.js";
import { ORCHESTRATOR_STEP } from "./handler.js";
import type { Monitor } from "./monitor.js";

export interface StuckTask {
  org: string;
  task: string;
  status: string;
  /** e.g. `a:completed/1 b:completed/1 c:completed/2 d:pending/0` (status/attempt per step). */
  shape: string;
}

export interface TaskOutcome {
  byStatus: Record<string, number>;
  completed: number;
  failed: number;
  stuck: StuckTask[];
  /** Stuck tasks by shape, most common first. */
  stuckShapes: Array<{ shape: string; count: number }>;
  /** Failed tasks' errors by message, most common first. */
  failures: Array<{ error: string; count: number }>;
  /** Tasks in the database per tenant (vs. started through the API). */
  inDatabase: number;
}

export interface ChainVerification {
  tenant: string;
  ok: boolean;
  rows: number;
  detail: string;
}

export async function readAudit(monitor: Monitor, tenants: readonly string[]): Promise<{ rows: AuditRow[]; steps: StepRow[] }> {
  const rows = await monitor.query<AuditRow>(
    `SELECT org_id, seq::text, action, verdict, task_id, step_id, envelope_id, reason FROM audit_log WHERE org_id = ANY($1) ORDER BY audit_log.org_id, audit_log.seq`,
    [tenants],
  );
  const steps = await monitor.query<StepRow>(
    `SELECT org_id, task_id::text, step_id, status, attempt, CASE WHEN step_id = $2 THEN output END AS output FROM steps WHERE org_id = ANY($1)`,
    [tenants, ORCHESTRATOR_STEP],
  );
  return { rows, steps };
}

/** Each task's customer (the concurrency key's value, `--limits`). */
export async function readCustomers(monitor: Monitor, tenants: readonly string[]): Promise<Map<string, string>> {
  const rows = await monitor.query<{ id: string; customer: string | null }>(`SELECT id::text, input->>'customer' AS customer FROM tasks WHERE org_id = ANY($1)`, [tenants]);
  return new Map(rows.filter((r) => r.customer !== null).map((r) => [r.id, r.customer!]));
}

export async function readOutcome(monitor: Monitor, tenants: readonly string[]): Promise<TaskOutcome> {
  const tasks = await monitor.query<{ id: string; org_id: string; status: string; error: { message?: string; code?: string } | null }>(
    `SELECT id::text, org_id, status, error FROM tasks WHERE org_id = ANY($1)`,
    [tenants],
  );
  const steps = await monitor.query<{ task_id: string; step_id: string; status: string; attempt: number }>(
    `SELECT task_id::text, step_id, status, attempt FROM steps WHERE org_id = ANY($1) AND task_id IN (SELECT id FROM tasks WHERE status NOT IN ('completed', 'failed', 'cancelled')) ORDER BY task_id, step_id`,
    [tenants],
  );
  const byStatus: Record<string, number> = {};
  for (const t of tasks) byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
  const shapes = new Map<string, string[]>();
  for (const s of steps) shapes.set(s.task_id, [...(shapes.get(s.task_id) ?? []), `${s.step_id}:${s.status}/${s.attempt}`]);
  const stuck = tasks
    .filter((t) => !["completed", "failed", "cancelled"].includes(t.status))
    .map((t) => ({ org: t.org_id, task: t.id, status: t.status, shape: (shapes.get(t.id) ?? []).join(" ") }));
  return {
    byStatus,
    completed: byStatus.completed ?? 0,
    failed: (byStatus.failed ?? 0) + (byStatus.cancelled ?? 0),
    stuck,
    stuckShapes: countBy(stuck.map((t) => t.shape)).map(({ value, count }) => ({ shape: value, count })),
    failures: countBy(tasks.filter((t) => t.status === "failed").map((t) => `${t.error?.code ?? "?"}: ${t.error?.message ?? ""}`.slice(0, 160))).map(({ value, count }) => ({ error: value, count })),
    inDatabase: tasks.length,
  };
}

function countBy(values: readonly string[]): Array<{ value: string; count: number }> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([value, count]) => ({ value, count }));
}

/** `switchyard audit verify --tenant T --json` for each tenant; a chain with no rows does not count as verified. */
export async function verifyChains(tenants: readonly string[], env: Record<string, string>): Promise<ChainVerification[]> {
  const results: ChainVerification[] = [];
  for (const tenant of tenants) {
    const out = await runCliCommand(["audit", "verify", "--tenant", tenant, "--json"], env);
    let parsed: { ok?: boolean; rows?: number; firstBroken?: { seq: number; reason: string } } = {};
    try {
      parsed = JSON.parse(out.stdout.trim().split("\n").pop() ?? "{}");
    } catch {
      // reported below with the raw output
    }
    const rows = Number(parsed.rows ?? 0);
    const ok = out.code === 0 && parsed.ok === true && rows > 0;
    const detail = ok
      ? `${rows} rows verified`
      : parsed.firstBroken
        ? `broken at seq ${parsed.firstBroken.seq}: ${parsed.firstBroken.reason}`
        : rows === 0 && out.code === 0
          ? "no audit rows: nothing was verified"
          : `exit ${out.code}: ${(out.stderr || out.stdout).trim().slice(0, 300)}`;
    results.push({ tenant, ok, rows, detail });
  }
  return results;
}
