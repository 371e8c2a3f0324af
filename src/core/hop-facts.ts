/**
 * What a governed hop is built from, none of which moves a step: the input a step's handler sees, the reply
 * address it may see, the facts the governor judges, the error of a denied hop, the verdict of an approved one,
 * and the REPLY payload. hops.ts moves the steps.
 */
import { parseDestination, type ActionType, type HopFacts, type Verdict } from "../domain.js";
import { viewAddress } from "./reply-address.js";
import type { Draft } from "./draft.js";
import type { StepError, StepRecord } from "./model.js";
import { checkAgainstSchema, schemaError, type SchemaSide } from "../workflow/step-schemas.js";

const encoder = new TextEncoder();

/** A step's input: the task input plus the outputs of the steps it needs; for delegations, the query payload. */
export function stepInput(draft: Draft, step: StepRecord): unknown {
  if (step.kind === "delegation") return step.delegation?.payload ?? null;
  const def = draft.workflow.steps.find((s) => s.id === step.stepId);
  const steps: Record<string, unknown> = {};
  for (const need of def?.needs ?? []) steps[need] = draft.step(need)?.output ?? null;
  return { task: draft.task.input, steps };
}

/**
 * What a handler sees of the task's reply address (`work.replyTo`): kind and display, never a credential. Absent
 * from the payload when the task has none, so the WORK of every other task is unchanged.
 */
export function replyToField(draft: Draft): { replyTo?: { kind: string; display: string } } {
  const view = viewAddress(draft.task.replyTo);
  return view ? { replyTo: view } : {};
}

/**
 * The step error of a workflow step's input (at dispatch) or output (at result) that does not match the schema its
 * definition names; undefined when it matches or there is none. Delegated work has no schema.
 */
export function stepSchemaError(draft: Draft, step: StepRecord, side: SchemaSide, value: unknown): StepError | undefined {
  if (step.kind !== "workflow") return undefined;
  const def = draft.workflow.steps.find((s) => s.id === step.stepId);
  const schema = side === "input" ? def?.inputSchema : def?.outputSchema;
  if (schema == null) return undefined;
  // A workflow version is immutable, so (tenant, name@version, step, side) always names the same schema.
  const key = `${draft.task.orgId}\n${draft.task.workflowName}@${draft.task.workflowVersion}\n${step.stepId}\n${side}`;
  const mismatch = checkAgainstSchema(key, schema, value);
  return mismatch ? schemaError(side, step.stepId, mismatch) : undefined;
}

export function stepTimeoutMs(draft: Draft, step: StepRecord): number {
  const def = draft.workflow.steps.find((s) => s.id === step.stepId);
  return def?.timeoutMs ?? draft.ctx.defaultStepTimeoutMs;
}

export function actionFor(step: StepRecord): ActionType {
  if (step.destination.startsWith("foreign:")) return "a2a_egress";
  return step.kind === "delegation" ? "sub_query" : "dispatch";
}

export function errorFor(verdict: Verdict): StepError {
  const code =
    verdict.rule === "builtin:clearance" ? "CLEARANCE_DENIED" : verdict.rule === "builtin:budget" || verdict.rule === "builtin:daily-budget" ? "BUDGET_EXCEEDED" : "POLICY_DENIED";
  return { code, message: `${verdict.reason} (rule ${verdict.rule})`, retryable: false };
}

export function hopFacts(draft: Draft, step: StepRecord, action: ActionType, destination: string, cost: number): HopFacts {
  const workflowStep = draft.workflow.steps.find((s) => s.id === step.stepId);
  return {
    action,
    orgId: draft.task.orgId,
    taskId: draft.task.id,
    stepId: step.stepId,
    workflow: `${draft.task.workflowName}@${draft.task.workflowVersion}`,
    destination: parseDestination(destination) ?? { kind: "role", id: destination },
    clearance: step.clearance,
    cost,
    taskCost: draft.task.cost,
    taskBudget: draft.task.budget,
    approvalHint: workflowStep?.approval ?? false,
    delegationDepth: step.depth,
    tenantDailyCost: draft.ctx.tenant.dailyCost + (draft.task.cost - draft.base.task.cost),
    tenantDailyBudget: draft.ctx.tenant.dailyBudget,
    egressEnabled: draft.ctx.tenant.egressEnabled,
  };
}

/**
 * The REPLY payload, carrying the delegate's output as `result` when it completed and the whole payload stays
 * within the cap: the origin's worker then reads it from the envelope and needs no database (issue 27 §3). Beyond
 * the cap only `resultRef` travels, and the worker reads the stored output through its result reader.
 */
export function replyPayloadJson(payload: Record<string, unknown>, delegate: StepRecord, maxPayloadBytes: number): string {
  const bare = JSON.stringify(payload);
  if (delegate.status !== "completed") return bare;
  const carrying = JSON.stringify({ ...payload, result: delegate.output ?? null });
  // Byte length only when it could matter: a UTF-16 length within a third of the cap is within it in UTF-8.
  if (carrying.length * 3 <= maxPayloadBytes || encoder.encode(carrying).byteLength <= maxPayloadBytes) return carrying;
  return bare;
}

/** The verdict of a hop a human approved: an approval answers requires_approval, never a deny. */
export function approvedVerdict(current: Verdict, approvedBy: { approvalId: string; actor: string }): Verdict {
  if (current.verdict === "deny") return current;
  return { verdict: "allow", rule: `approval:${approvedBy.approvalId}`, reason: `approved by ${approvedBy.actor}` };
}
