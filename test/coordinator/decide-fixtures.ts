/** Builders for pure decision tests: a workflow, its initial state, and a deterministic context. */
import { createHash } from "node:crypto";
import type { HopFacts, StepDefinition, Verdict, WorkflowDefinition } from "../../src/domain.js";
import { pendingWorkflowStep, type DecideContext, type StepRecord, type TaskState } from "../../src/core/model.js";

export function stepDef(id: string, to: string, overrides: Partial<StepDefinition> = {}): StepDefinition {
  const [kind, name] = to.split(":") as ["role", string];
  return { id, to: { kind, id: name }, needs: [], timeoutMs: 1000, retries: 0, backoffMs: 100, costEstimate: 1, clearance: 0, approval: false, ...overrides };
}

export function chain(...steps: StepDefinition[]): WorkflowDefinition {
  return {
    name: "wf",
    budget: null,
    steps: steps.map((s, i) => ({ ...s, needs: s.needs.length > 0 || i === 0 ? s.needs : [steps[i - 1]!.id] })),
  };
}

export const TASK_ID = "00000000-0000-4000-8000-000000000001";

export function initialState(workflow: WorkflowDefinition, input: unknown = { topic: "x" }): TaskState {
  const steps = new Map<string, StepRecord>();
  for (const s of workflow.steps) steps.set(s.id, pendingWorkflowStep(TASK_ID, "acme", s));
  return {
    task: { id: TASK_ID, orgId: "acme", workflowName: "wf", workflowVersion: 1, input, status: "running", budget: workflow.budget, cost: 0, error: null, finishedAtMs: null, replyTo: null },
    steps,
    workflow,
  };
}

export const allowAll = (): Verdict => ({ verdict: "allow", rule: "test:allow", reason: "allowed" });

export function context(now: number, seed: string, govern: (hop: HopFacts) => Verdict = allowAll): DecideContext {
  let n = 0;
  return {
    now,
    govern,
    hashPayload: (json) => createHash("sha256").update(json).digest("hex"),
    newId: () => createHash("sha256").update(`${seed}:${n++}`).digest("hex").slice(0, 32),
    maxPayloadBytes: 1024 * 1024,
    defaultStepTimeoutMs: 1000,
    approvalTtlMs: 60_000,
    tenant: { dailyCost: 0, dailyBudget: null, egressEnabled: false },
  };
}
