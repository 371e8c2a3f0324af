/** Builds and rewrites audit chains for the checkpoint tests. */
import type { AuditEntry, AuditRow } from "../../src/domain.js";
import { GENESIS_HASH } from "../../src/domain.js";
import { chainRows } from "../../src/governance/audit-hash.js";
import { appendAudit, listAudit } from "../../src/store/audit/postgres-audit-store.js";
import { withTransaction, type Pool } from "../../src/store/db.js";

export function entry(orgId: string, n: number): AuditEntry {
  return {
    orgId,
    action: n % 2 ? "dispatch" : "result",
    actor: "coordinator",
    destination: "role:writer",
    verdict: n % 2 ? "allow" : "accepted",
    rule: "builtin:default",
    reason: `entry ${n}`,
    payloadHash: "cd".repeat(32),
    cost: 0.5 * n,
    taskId: "task-1",
    stepId: `step-${n}`,
    envelopeId: `env-${n}`,
    atMs: 1_700_000_000_000 + n,
  };
}

/** Appends `count` rows to the tenant's chain (in batches of 4, like a busy coordinator would). */
export async function appendRows(pool: Pool, orgId: string, count: number): Promise<void> {
  const { rows } = await pool.query<{ seq: number }>("SELECT coalesce(max(seq), 0)::int AS seq FROM audit_log WHERE org_id = $1", [orgId]);
  const first = rows[0]!.seq + 1;
  for (let n = first; n < first + count; n += 4) {
    const batch = Array.from({ length: Math.min(4, first + count - n) }, (_, i) => entry(orgId, n + i));
    await withTransaction(pool, (client) => appendAudit(client, batch));
  }
}

/**
 * What an attacker with write access to the database does: edits rows, then recomputes every hash from the
 * genesis with the real chaining code, replaces the tenant's rows and moves its head — a chain that verifies.
 */
export async function rewriteChain(pool: Pool, orgId: string, edit: (row: AuditRow) => AuditEntry): Promise<void> {
  const original = await listAudit(pool, orgId, { limit: 10_000 });
  const rewritten = chainRows({ seq: 0, hash: GENESIS_HASH }, original.map(edit));
  await withTransaction(pool, async (client) => {
    await client.query("DELETE FROM audit_log WHERE org_id = $1", [orgId]);
    for (const r of rewritten) {
      await client.query(
        `INSERT INTO audit_log (org_id, seq, prev_hash, hash, action, actor, destination, verdict, rule, reason, payload_hash, cost, task_id, step_id, envelope_id, at_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
        [r.orgId, r.seq, r.prevHash, r.hash, r.action, r.actor, r.destination, r.verdict, r.rule, r.reason, r.payloadHash, r.cost, r.taskId, r.stepId, r.envelopeId, r.atMs],
      );
    }
    const last = rewritten.at(-1)!;
    await client.query("UPDATE audit_heads SET seq = $2, hash = $3 WHERE org_id = $1", [orgId, last.seq, last.hash]);
  });
}

/** Edits one row's reason, leaving the others as they were. */
export function editReason(seq: number, reason: string): (row: AuditRow) => AuditEntry {
  return (row) => ({ ...row, reason: row.seq === seq ? reason : row.reason });
}
