/**
 * The order a task's steps are decided in: the order a reader of the workflow expects, so the same events always
 * produce the same effects in the same order.
 */
import type { WorkflowDefinition } from "../domain.js";
import type { StepRecord } from "./model.js";

/** Workflow steps in definition order, then delegation steps in creation order. */
export function orderSteps(workflow: WorkflowDefinition, steps: StepRecord[]): Map<string, StepRecord> {
  const byId = new Map(steps.map((s) => [s.stepId, s]));
  const ordered = new Map<string, StepRecord>();
  for (const def of workflow.steps) {
    const step = byId.get(def.id);
    if (step) ordered.set(def.id, step);
  }
  for (const step of steps) if (!ordered.has(step.stepId)) ordered.set(step.stepId, step);
  return ordered;
}
