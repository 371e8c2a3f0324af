/**
 * With `--limits` the branch steps carry a concurrency key (`task.input.customer`, limit 2; workload.ts): read back
 * from each tenant's audit chain (commit order), no customer ever has more than the limit of branch steps in
 * flight — through coordinator kills, Redis and Postgres restarts. In flight, as the coordinator counts it: from a
 * step's `dispatch` allow row to the row that closes the attempt (a result, a timeout).
 */
import type { AuditRow, Violation } from "./audit-checks.js";
import { KEY_LIMIT, STEPS } from "./workload.js";

const KEYED_STEPS = new Set(STEPS.filter((s) => s.role === "branch").map((s) => s.id));
const CLOSING = new Set(["result", "timeout"]);

/** The highest number of one customer's keyed steps in flight, and a violation for each time it passed the limit. */
export function checkKeyPeaks(rows: readonly AuditRow[], customers: ReadonlyMap<string, string>): { peak: number; violations: Violation[] } {
  const inFlight = new Map<string, number>();
  const open = new Set<string>();
  const violations: Violation[] = [];
  let peak = 0;
  for (const row of rows) {
    if (!KEYED_STEPS.has(row.step_id)) continue;
    const customer = customers.get(row.task_id);
    if (customer === undefined) continue;
    const group = `${row.org_id}/${customer}`;
    const step = `${row.task_id}/${row.step_id}`;
    if (row.action === "dispatch" && row.verdict === "allow") {
      open.add(step);
      const n = (inFlight.get(group) ?? 0) + 1;
      inFlight.set(group, n);
      peak = Math.max(peak, n);
      if (n > KEY_LIMIT) violations.push({ kind: "concurrency key exceeded", org: row.org_id, task: row.task_id, step: row.step_id, detail: `customer ${customer}: ${n} in flight (limit ${KEY_LIMIT}) at seq ${row.seq}` });
    } else if (CLOSING.has(row.action) && open.delete(step)) {
      inFlight.set(group, inFlight.get(group)! - 1);
    }
  }
  return { peak, violations };
}
