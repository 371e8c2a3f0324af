/**
 * A working copy of one task's state while an event is decided. Changes replace step objects rather than mutate
 * them, so the input state stays untouched and the shell can tell changed steps by identity.
 */
import type { AuditEntry } from "../domain.js";
import type {
  DecideContext,
  Effect,
  StepError,
  StepRecord,
  TaskRecord,
  TaskState,
} from "./model.js";
import { nextStepStatus, nextTaskStatus, type StepEvent, type TaskEvent } from "./transitions.js";

/** A change to a step or a task other than its status, which only a transition (transitions.ts) changes. */
type StepPatch = Partial<Omit<StepRecord, "status">>;
type TaskPatch = Partial<Omit<TaskRecord, "status">>;

export class Draft {
  task: TaskRecord;
  readonly steps: Map<string, StepRecord>;
  readonly effects: Effect[] = [];

  constructor(
    readonly base: TaskState,
    readonly ctx: DecideContext,
  ) {
    this.task = { ...base.task };
    this.steps = new Map(base.steps);
  }

  get workflow() {
    return this.base.workflow;
  }

  step(stepId: string): StepRecord | undefined {
    return this.steps.get(stepId);
  }

  updateStep(stepId: string, patch: StepPatch): StepRecord {
    const current = this.steps.get(stepId);
    if (!current) throw new Error(`decide: no step ${stepId}`); // a bug in decision code, not bad input
    const next = { ...current, ...patch };
    this.steps.set(stepId, next);
    return next;
  }

  /** Moves a step along its transition for `event` (transitions.ts), with the rest of the change. */
  moveStep(stepId: string, event: StepEvent, patch: StepPatch = {}): StepRecord {
    const current = this.steps.get(stepId);
    if (!current) throw new Error(`decide: no step ${stepId}`);
    const next = { ...current, ...patch, status: nextStepStatus(current.status, event) };
    this.steps.set(stepId, next);
    return next;
  }

  addStep(step: StepRecord): void {
    this.steps.set(step.stepId, step);
  }

  updateTask(patch: TaskPatch): void {
    this.task = { ...this.task, ...patch };
  }

  moveTask(event: TaskEvent, patch: TaskPatch = {}): void {
    this.task = { ...this.task, ...patch, status: nextTaskStatus(this.task.status, event) };
  }

  accrue(delta: number): void {
    if (delta !== 0) this.updateTask({ cost: roundCost(this.task.cost + delta) });
  }

  audit(entry: Omit<AuditEntry, "orgId" | "taskId" | "atMs"> & { atMs?: number }): void {
    this.effects.push({
      type: "audit",
      entry: { orgId: this.task.orgId, taskId: this.task.id, atMs: this.ctx.now, ...entry },
    });
  }

  log(level: "info" | "warn" | "error", message: string, fields: Record<string, unknown> = {}): void {
    this.effects.push({ type: "log", level, message, fields: { orgId: this.task.orgId, taskId: this.task.id, ...fields } });
  }

  isTaskOpen(): boolean {
    return this.task.status === "running" || this.task.status === "parked";
  }

  /** Fails the whole task closed and cancels whatever else is still open. */
  failTask(stepId: string, error: StepError): void {
    if (!this.isTaskOpen()) return;
    this.moveTask("fail", { error: { ...error, stepId }, finishedAtMs: this.ctx.now });
    this.cancelOpenSteps("task failed");
  }

  cancelOpenSteps(reason: string): void {
    for (const step of this.steps.values()) {
      if (step.status === "completed" || step.status === "failed" || step.status === "cancelled") continue;
      if (step.status === "parked" && step.approvalId) {
        this.effects.push({ type: "close_approval", approvalId: step.approvalId, approved: false, actor: "coordinator", reason });
      }
      // In-flight cost estimates are released: the attempt will never be accepted.
      if (this.attemptInFlight(step)) this.releaseEstimate(step.stepId);
      this.moveStep(step.stepId, "cancel", { dueAtMs: null });
    }
  }

  /** Whether the step's current attempt holds its reserved estimate: dispatched, waiting, or parked on a REPLY. */
  attemptInFlight(step: StepRecord): boolean {
    return step.status === "dispatched" || step.status === "waiting" || (step.status === "parked" && step.checkpoint !== null);
  }

  /** An attempt ends without a RESULT (timed out, refused, its REPLY denied): its reserved estimate is given back. */
  releaseEstimate(stepId: string): void {
    const step = this.steps.get(stepId)!;
    const reserved = this.estimateOf(step);
    this.accrue(-reserved);
    this.updateStep(stepId, { cost: roundCost(step.cost - reserved) });
  }

  /**
   * The cost reserved per attempt. A step's `cost` is the actual cost of its finished attempts plus this
   * estimate while an attempt is in flight, so the task's cost is always the sum of its steps'.
   */
  estimateOf(step: StepRecord): number {
    if (step.kind === "delegation") return 0;
    return this.workflow.steps.find((s) => s.id === step.stepId)?.costEstimate ?? 0;
  }

  toState(): TaskState {
    return { task: this.task, steps: this.steps, workflow: this.base.workflow };
  }
}

/** Cost arithmetic in fixed precision so repeated accruals do not drift (1e-9 units). */
export function roundCost(value: number): number {
  return Math.round(value * 1e9) / 1e9;
}
