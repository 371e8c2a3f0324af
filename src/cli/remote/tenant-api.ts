/**
 * The tenant operations the CLI performs, behind one interface with one implementation (remote-api.ts: a client of
 * the tenant services) over two transports: the gateway's handlers run in-process against the database (direct
 * mode, the default: direct-transport.ts) or a Switchyard gateway when `--url` / SWITCHYARD_URL is set. Commands
 * call this interface and print the same output either way: both return the very shapes direct mode has always
 * printed (TaskView, ApprovalRow, AuditRow, …).
 *
 * The admin commands have their own clients beside this one (admin-api.ts, connection-api.ts, ingest-api.ts,
 * foreign-api.ts); the commands without a service (migrate, start, demo, policy, vault, shards, bus, approval
 * link/keys, audit checkpoint) keep using the runtime directly.
 */
import type { ReplyOutcome } from "../../core/reply-types.js";
import type { ApprovalRow } from "../../store/approvals/approval-store.js";
import type { TaskView } from "../../tasks/tasks.js";
import type { AuditRow } from "../../domain.js";
import type { WorkflowDocument } from "../../gateway/convert/workflows.js";
import type { TaskListFilter, TaskPage } from "../../gateway/task-list.js";
import type { ListAuditOptions } from "../../store/audit/audit-store.js";
import type { VerifyWithCheckpointsResult } from "../../governance/checkpoint-verify.js";
import type { ExportedCheckpoint } from "../../governance/checkpoints.js";
import type { SubmittedWorkflow, WorkflowSummary } from "../../store/workflow-store.js";
import type { InputFile } from "../args.js";

// The shapes the API answers in, named here so commands speak the client's vocabulary, not the modules behind it.
export type { ApprovalRow, AuditRow, TaskView, VerifyWithCheckpointsResult };
export type { TaskStatus } from "../../core/model.js";
/** The page sizes TaskService.List accepts (the CLI's `--limit` checks them before asking). */
export { DEFAULT_TASK_PAGE_SIZE, MAX_TASK_PAGE_SIZE } from "../../gateway/task-page.js";

export interface DecideOutcome {
  status: "approved" | "denied";
  decidedBy: string;
  alreadyDecided: boolean;
}

export interface TenantApi {
  /** `remote` talks to a gateway; `direct` runs the gateway's handlers in this process. */
  readonly mode: "direct" | "remote";
  /** Validates and stores a workflow file. Validation errors name the file and the field path. */
  submitWorkflow(file: InputFile): Promise<SubmittedWorkflow>;
  getWorkflow(ref: string): Promise<WorkflowDocument>;
  listWorkflows(): Promise<WorkflowSummary[]>;
  startTask(request: { workflow: string; input: unknown; idempotencyKey?: string }): Promise<{ taskId: string; created: boolean; workflow: string }>;
  getTask(id: string): Promise<TaskView>;
  /** The task now and at every change until it finishes (the API's streaming Watch). */
  watchTask(id: string, signal: AbortSignal): AsyncIterable<TaskView>;
  /** Why the task does not move (the API's TaskService.Explain). */
  explainTask(id: string): Promise<string[]>;
  cancelTask(id: string, actor: string, reason: string): Promise<{ task: TaskView; alreadyFinished: boolean }>;
  /** Posts text to the task's reply address as the tenant; waits for the outcome (see TaskService.reply). */
  replyTask(request: { taskId: string; text: string; idempotencyKey?: string; actor: string }): Promise<ReplyOutcome>;
  listTasks(filter: TaskListFilter): Promise<TaskPage>;
  listApprovals(filter: { status?: ApprovalRow["status"]; taskId?: string }): Promise<ApprovalRow[]>;
  decideApproval(request: { approvalId: string; approve: boolean; actor: string; reason?: string }): Promise<DecideOutcome>;
  /** `tenant` is the tenant verified: --tenant in direct mode, the key's tenant in remote mode (as the service answers it). */
  verifyAudit(options: { checkpoints?: { parsed: ExportedCheckpoint[]; text: string; source: string } }): Promise<{ tenant: string; result: VerifyWithCheckpointsResult }>;
  listAudit(options: ListAuditOptions): Promise<AuditRow[]>;
  close(): Promise<void>;
}

export interface RemoteTarget {
  url: string;
  token: string;
}
