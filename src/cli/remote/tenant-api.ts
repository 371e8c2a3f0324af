/**
 * The tenant operations the CLI performs, behind one interface with one implementation (remote-api.ts: a client of
 * the tenant services) over two transports: the gateway's handlers run in-process against the database (direct
 * mode, the default: direct-transport.ts) or a Switchyard gateway when `--url` / SWITCHYARD_URL is set. Commands
 * call this interface and print the same output either way: both return the very shapes direct mode has always
 * printed (TaskView, ApprovalRow, AuditRow, …).
 *
 * The admin commands have their own clients beside this one (admin-api.ts, connection-api.ts, ingest-api.ts,
 * foreign-api.ts, checkpoint-api.ts); the commands without a service (migrate, start, demo, policy, vault, shards,
 * bus) keep using the runtime directly.
 */
import type { ReplyOutcome } from "../../core/reply-types.js";
import type { ApprovalRow } from "../../store/approvals/approval-store.js";
import type { TaskView } from "../../tasks/tasks.js";
import type { AuditRow } from "../../domain.js";
import type { WorkflowDocument } from "../../gateway/convert/workflows.js";
import type { TaskListFilter, TaskPage } from "../../gateway/task-list.js";
import type { ListAuditOptions } from "../../store/audit/audit-store.js";
import type { VerifyWithCheckpointsResult } from "../../governance/checkpoint-verify.js";
import type { Checkpoint } from "../../governance/checkpoint-signing.js";
import type { ExportedCheckpoint } from "../../governance/checkpoint-export.js";
import type { ApprovalLinks } from "../../approvals/link-signing.js";
import type { LinkKeyInfo } from "../../store/approvals/approval-store.js";
import type { SubmittedWorkflow, WorkflowSummary } from "../../store/workflow-store.js";
import type { InputFile } from "../args.js";

// The shapes the API answers in, named here so commands speak the client's vocabulary, not the modules behind it.
export type { ApprovalLinks, ApprovalRow, AuditRow, Checkpoint, ExportedCheckpoint, LinkKeyInfo, TaskView, VerifyWithCheckpointsResult };
/** Reads an exported checkpoints file (`audit verify --checkpoints`) here, so a bad line is refused before any call. */
export { parseCheckpointLines } from "../../governance/checkpoint-export.js";
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
  /** Signed approve and deny links for a pending approval; `baseUrl` absent: the gateway's public URL. */
  createApprovalLinks(request: { approvalId: string; baseUrl?: string; ttlMs?: number }): Promise<ApprovalLinks>;
  /** The tenant's link keys, newest first (never the secrets). */
  listLinkKeys(): Promise<LinkKeyInfo[]>;
  /** Starts signing links with a new key; returns its kid. */
  rotateLinkKey(): Promise<string>;
  /** Retires a link key (NOT_FOUND when the tenant has none by that kid). */
  retireLinkKey(kid: string): Promise<{ kid: string; retiredAt: string }>;
  /** `tenant` is the tenant verified: --tenant in direct mode, the key's tenant in remote mode (as the service answers it). */
  verifyAudit(options: { checkpoints?: { parsed: ExportedCheckpoint[]; text: string; source: string } }): Promise<{ tenant: string; result: VerifyWithCheckpointsResult }>;
  listAudit(options: ListAuditOptions): Promise<AuditRow[]>;
  /** The tenant's signed checkpoints in seq order. */
  listCheckpoints(): Promise<Checkpoint[]>;
  close(): Promise<void>;
}

export interface RemoteTarget {
  url: string;
  token: string;
}
