/**
 * The test stack's step-level helpers: `waitForStep` (a step reaches a status) and `decideApproval` (the stack's
 * `approve` / `deny`: find a task's pending approval, waiting for its step to park, then decide it through the
 * tenant API). Both wait as progress-wait.ts does: as long as the task's steps keep changing, and fail once nothing
 * moved for `stallMs`, saying what is stuck (`describeTask`).
 */
import { TERMINAL_STEP_STATUSES, TERMINAL_TASK_STATUSES, type StepStatus } from "../core/model.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { ApprovalStatus, type Approval } from "../gen/switchyard/api/v1/approvals_pb.js";
import type { StepView, TaskView } from "../tasks/tasks.js";
import type { SwitchyardClient } from "./client.js";
import { describeTask, waitForProgress } from "./progress-wait.js";

type TaskReader = { get(orgId: string, taskId: string): Promise<TaskView> };

/**
 * What `waitForStep` waits for unless told: the step has settled — it finished (`completed`, `failed`,
 * `cancelled`) or it is `parked`, waiting on something outside the workers (an approval, a foreign agent).
 */
export const SETTLED_STEP_STATUSES: readonly StepStatus[] = [...TERMINAL_STEP_STATUSES, "parked"];

export interface WaitForStepOptions {
  /** The status (or any of the statuses) awaited. @defaultValue SETTLED_STEP_STATUSES: completed, failed, cancelled or parked */
  status?: StepStatus | readonly StepStatus[];
  /** Fail when nothing moved for this long (ms). @defaultValue DEFAULT_STALL_MS (20 s) */
  stallMs?: number;
  /** Pause between reads (ms). @defaultValue 100 */
  intervalMs?: number;
}

/** What `approve` / `deny` take. */
export interface DecideOptions {
  /** Why, as recorded in the approval and its audit row. */
  reason?: string;
  /** Who decides, as recorded; the stack's API key is always added: `alice (apikey:test-stack)`. @defaultValue the key alone */
  actor?: string;
  /** Fail when nothing moved for this long (ms) while no approval is pending. @defaultValue DEFAULT_STALL_MS (20 s) */
  stallMs?: number;
  intervalMs?: number;
}

/** The outcome of `approve` / `deny`, as `ApprovalService.Decide` answered it. */
export interface ApprovalDecision {
  approvalId: string;
  taskId: string;
  stepId: string;
  /** The approval's outcome: the first decision's, when it had been decided before (`alreadyDecided`). */
  status: "approved" | "denied";
  /** The actor recorded, e.g. `apikey:test-stack`. */
  decidedBy: string;
  alreadyDecided: boolean;
}

/** `details.reason` of the SwitchyardError (FAILED_PRECONDITION) `approve` / `deny` throw when they cannot choose. */
export const ApprovalPick = {
  /** No approval of the task (or of the named step) is pending, and none can come: the task or step ended, or nothing moved for `stallMs`. */
  None: "NO_PENDING_APPROVAL",
  /** Several approvals of the task are pending: name the step. */
  Several: "SEVERAL_PENDING_APPROVALS",
} as const;

/** `details.reason` of the SwitchyardError (FAILED_PRECONDITION) `waitForStep` throws when the status can no longer come. */
export const STEP_STATUS_UNREACHABLE = "STEP_STATUS_UNREACHABLE";

function taskEnded(view: TaskView): boolean {
  return TERMINAL_TASK_STATUSES.includes(view.status);
}

function progressKey(view: TaskView): string {
  return JSON.stringify([view.status, view.steps.map((s) => [s.id, s.status, s.attempts, s.approvalId])]);
}

function stepOf(view: TaskView, stepId: string): StepView | undefined {
  return view.steps.find((s) => s.id === stepId);
}

export function waitForStep(tasks: TaskReader, orgId: string, taskId: string, stepId: string, options: WaitForStepOptions = {}): Promise<StepView> {
  const awaited: readonly StepStatus[] = options.status === undefined ? SETTLED_STEP_STATUSES : typeof options.status === "string" ? [options.status] : options.status;
  const what = `step ${stepId} of task ${taskId} to be ${awaited.join(" or ")}`;
  const reached = (view: TaskView) => {
    const step = stepOf(view, stepId);
    return step !== undefined && awaited.includes(step.status);
  };
  // A step that ended, or a task that ended, will not move again: fail now rather than after stallMs.
  const hopeless = (view: TaskView) => {
    const step = stepOf(view, stepId);
    return taskEnded(view) || (step !== undefined && TERMINAL_STEP_STATUSES.includes(step.status));
  };
  return waitForProgress({
    what,
    progress: () => tasks.get(orgId, taskId),
    done: (view) => reached(view) || hopeless(view),
    key: progressKey,
    describeStuck: describeTask,
    ...(options.stallMs !== undefined ? { stallMs: options.stallMs } : {}),
    ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
  }).then((view) => {
    const step = stepOf(view, stepId);
    if (step && awaited.includes(step.status)) return step;
    const where = step ? `step ${stepId} is ${step.status}` : `the task has no step ${stepId} (steps: ${view.steps.map((s) => s.id).join(", ") || "none"})`;
    throw new SwitchyardError(ErrorCode.FailedPrecondition, `waiting for ${what}: ${where}, and it will not change: ${describeTask(view)}`, {
      details: { reason: STEP_STATUS_UNREACHABLE, taskId, stepId, stepStatus: step?.status ?? null, taskStatus: view.status },
    });
  });
}

interface ApprovalState {
  view: TaskView;
  pending: Approval[];
}

export interface DecideApprovalRequest {
  taskId: string;
  stepId: string | undefined;
  approve: boolean;
  options: DecideOptions;
}

/**
 * Waits until an approval of the task (of `stepId`, when given) is pending, then decides it with
 * `ApprovalService.Decide` — the tenant's own route, so the governor, the audit row and the step's resumption are
 * the ones a deployed gateway gives. Without `stepId` exactly one pending approval is decided; several are refused.
 */
export async function decideApproval(client: SwitchyardClient, tasks: TaskReader, orgId: string, request: DecideApprovalRequest): Promise<ApprovalDecision> {
  const { taskId, stepId, options } = request;
  const what = `an approval of ${stepId === undefined ? "" : `step ${stepId} of `}task ${taskId} to be pending`;
  const read = async (): Promise<ApprovalState> => {
    const view = await tasks.get(orgId, taskId);
    const { approvals } = await client.approvals.list({ taskId, status: ApprovalStatus.PENDING });
    return { view, pending: approvals.filter((a) => stepId === undefined || a.stepId === stepId) };
  };
  const hopeless = ({ view }: ApprovalState) => {
    const step = stepId === undefined ? undefined : stepOf(view, stepId);
    return taskEnded(view) || (step !== undefined && TERMINAL_STEP_STATUSES.includes(step.status));
  };
  const none = (view: TaskView, why: string, cause?: unknown) =>
    new SwitchyardError(ErrorCode.FailedPrecondition, `no pending approval for ${stepId === undefined ? "" : `step ${stepId} of `}task ${taskId}: ${why}`, {
      details: { reason: ApprovalPick.None, taskId, ...(stepId !== undefined ? { stepId } : {}), taskStatus: view.status },
      ...(cause !== undefined ? { cause } : {}),
    });

  let last: ApprovalState | undefined;
  let state: ApprovalState;
  try {
    state = await waitForProgress({
      what,
      progress: async () => (last = await read()),
      done: (s) => s.pending.length > 0 || hopeless(s),
      key: (s) => progressKey(s.view),
      describeStuck: (s) => describeTask(s.view),
      ...(options.stallMs !== undefined ? { stallMs: options.stallMs } : {}),
      ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
    });
  } catch (error) {
    // Only a stall becomes NO_PENDING_APPROVAL; a failed read (unknown task, API error) is thrown as it is.
    if (last === undefined || !(error instanceof Error) || error instanceof SwitchyardError || !error.message.startsWith("stuck waiting for")) throw error;
    throw none(last.view, error.message, error);
  }
  if (state.pending.length === 0) throw none(state.view, `the ${taskEnded(state.view) ? "task" : "step"} has ended: ${describeTask(state.view)}`);
  if (state.pending.length > 1) {
    const steps = state.pending.map((a) => `${a.stepId} (${a.action} to ${a.destination})`);
    throw new SwitchyardError(ErrorCode.FailedPrecondition, `task ${taskId} has ${state.pending.length} pending approvals, of steps ${steps.join(", ")}: name the step to decide`, {
      details: { reason: ApprovalPick.Several, taskId, pending: state.pending.map((a) => ({ approvalId: a.id, stepId: a.stepId, action: a.action })) },
    });
  }
  const approval = state.pending[0]!;
  const decided = await client.approvals.decide({ id: approval.id, approve: request.approve, reason: options.reason ?? "", actor: options.actor ?? "" });
  return {
    approvalId: approval.id,
    taskId,
    stepId: approval.stepId,
    status: decided.status === ApprovalStatus.APPROVED ? "approved" : "denied",
    decidedBy: decided.decidedBy,
    alreadyDecided: decided.alreadyDecided,
  };
}
