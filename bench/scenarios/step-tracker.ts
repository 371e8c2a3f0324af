/**
 * Watches every batch the engine commits and records, per step attempt, when it was dispatched and when its
 * accepted RESULT was committed. That is what (a) counts and what (e) measures:
 *
 * - dispatched at: the start of the engine transaction whose decision created the step's WORK envelope (an upper
 *   bound on the latency: the envelope is built a little after the transaction begins); for a task's first step
 *   the caller may record an earlier time instead (the moment the task start was due, see latency.ts);
 * - completed at: the moment `engine.apply` resolved for the batch holding the step's `result` / `accepted`
 *   audit row, i.e. after COMMIT returned. The audit row is the proof: it commits with the step's completion.
 */
import { performance } from "node:perf_hooks";
import type { ApplyResult, EngineInput } from "../../src/coordinator/engine.js";
import type { ProbedEngine } from "./probe.js";

export interface StepLatency {
  taskId: string;
  stepId: string;
  ms: number;
  /** Of `ms`, the part after the harness created the RESULT (coordinator queueing + transaction); ms clock. */
  coordinatorMs?: number;
}

export class StepTracker {
  completedSteps = 0;
  completedTasks = 0;
  firstDispatchAt: number | undefined;
  lastCompletionAt: number | undefined;
  /** Latencies of completed steps (only with `recordLatency`). */
  readonly latencies: StepLatency[] = [];
  /** When each task finished (only with `recordLatency`). */
  readonly taskDoneAt = new Map<string, number>();
  private readonly dispatchedAt = new Map<string, number>();
  private readonly detach: () => void;

  constructor(
    engine: ProbedEngine,
    private readonly options: { recordLatency: boolean },
  ) {
    this.detach = engine.onApplied((result, inputs, startedAt, committedAt) => this.observe(result, inputs, startedAt, committedAt));
  }

  /** Records a step's dispatch time chosen by the caller (e.g. when the pacer released its task); it wins over the transaction's start. */
  dispatched(taskId: string, stepId: string, at: number): void {
    if (this.options.recordLatency) this.dispatchedAt.set(key(taskId, stepId), at);
    if (this.firstDispatchAt === undefined || at < this.firstDispatchAt) this.firstDispatchAt = at;
  }

  reset(): void {
    this.completedSteps = this.completedTasks = 0;
    this.firstDispatchAt = this.lastCompletionAt = undefined;
    this.latencies.length = 0;
    this.taskDoneAt.clear();
    this.dispatchedAt.clear();
  }

  stop(): void {
    this.detach();
  }

  private observe(result: ApplyResult, inputs: readonly EngineInput[], startedAt: number, committedAt: number): void {
    if (this.firstDispatchAt === undefined && result.hops.length > 0) this.firstDispatchAt = startedAt;
    const resultCreatedAt = new Map<string, number>();
    if (this.options.recordLatency) {
      for (const input of inputs) {
        if (input.event.type === "result" && input.createdAtMs) resultCreatedAt.set(key(input.taskId, input.event.stepId), input.createdAtMs);
      }
    }
    const committedAtMs = performance.timeOrigin + committedAt;
    for (const row of result.audit) {
      if (row.action === "dispatch" && row.verdict === "allow") {
        const k = key(row.taskId, row.stepId);
        if (this.options.recordLatency && !this.dispatchedAt.has(k)) this.dispatchedAt.set(k, startedAt);
      } else if (row.action === "result" && row.verdict === "accepted") {
        this.completedSteps++;
        this.lastCompletionAt = committedAt;
        if (this.options.recordLatency) {
          const k = key(row.taskId, row.stepId);
          const from = this.dispatchedAt.get(k);
          const created = resultCreatedAt.get(k);
          if (from !== undefined) {
            this.latencies.push({ taskId: row.taskId, stepId: row.stepId, ms: committedAt - from, ...(created ? { coordinatorMs: committedAtMs - created } : {}) });
          }
          this.dispatchedAt.delete(k);
        }
      }
    }
    for (const task of result.tasks) {
      if (task.status !== "completed") continue;
      this.completedTasks++;
      if (this.options.recordLatency) this.taskDoneAt.set(task.id, committedAt);
    }
  }
}

function key(taskId: string, stepId: string): string {
  return `${taskId}/${stepId}`;
}
