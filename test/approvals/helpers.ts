/**
 * Shared set-up for the approval tests: a workflow whose only step parks on an approval as soon as the task
 * starts (no worker or coordinator needed), and a snapshot of everything a decision could change.
 */
import { parseWorkflowDefinition } from "../../src/workflow/definition.js";
import { submitWorkflow } from "../../src/store/workflow-store.js";
import { getApproval } from "../../src/store/approvals/postgres-approval-store.js";
import type { ApprovalRow } from "../../src/store/approvals/approval-store.js";
import { listAudit } from "../../src/store/audit/postgres-audit-store.js";
import type { Queryable } from "../../src/store/db.js";
import type { TestRuntime } from "../support/runtime.js";

export const GATED_WORKFLOW = `
name: gated
steps:
  - { id: publish, to: "role:publisher", approval: true }
`;

export async function submitGated(rt: TestRuntime, ...orgs: string[]): Promise<void> {
  for (const org of orgs) await submitWorkflow(rt.pool, org, parseWorkflowDefinition(GATED_WORKFLOW));
}

/** Starts a task of the gated workflow; it parks at once. */
export async function parkTask(rt: TestRuntime, orgId: string): Promise<{ taskId: string; approvalId: string }> {
  const { taskId } = await rt.tasks.start({ orgId, workflow: "gated" });
  const task = await rt.tasks.get(orgId, taskId);
  if (task.status !== "parked" || !task.steps[0]?.approvalId) throw new Error(`task ${taskId} did not park: ${task.status}`);
  return { taskId, approvalId: task.steps[0].approvalId };
}

export async function approvalOf(db: Queryable, orgId: string, approvalId: string): Promise<ApprovalRow> {
  const row = await getApproval(db, orgId, approvalId);
  if (!row) throw new Error(`no approval ${approvalId}`);
  return row;
}

/** Everything a decision writes, for "nothing changed" assertions. */
export async function snapshot(rt: TestRuntime, orgId: string, taskId: string, approvalId: string) {
  const approval = await approvalOf(rt.pool, orgId, approvalId);
  const task = await rt.tasks.get(orgId, taskId);
  const audit = await listAudit(rt.pool, orgId, { taskId });
  const used = await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM used_link_tokens");
  const outbox = await rt.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM outbox");
  const work = (await rt.bus.stats("role:publisher", "harness")).length;
  return {
    approval: { status: approval.status, decidedBy: approval.decidedBy, decidedVia: approval.decidedVia },
    task: { status: task.status, step: task.steps[0]!.status },
    audit: audit.map((a) => `${a.seq}:${a.action}:${a.verdict}`),
    usedTokens: used.rows[0]!.n,
    outbox: outbox.rows[0]!.n,
    work,
  };
}

export async function approvalAuditRows(rt: TestRuntime, orgId: string, taskId: string) {
  return (await listAudit(rt.pool, orgId, { taskId })).filter((a) => a.action === "approval");
}
