/** Turning API values into what the pages show. */
import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { timestampDate, ValueSchema, type Timestamp, type Value } from "@bufbuild/protobuf/wkt";
import { ApprovalStatus } from "../../src/gen/switchyard/api/v1/approvals_pb.js";
import { StepStatus, TaskStatus } from "../../src/gen/switchyard/api/v1/tasks_pb.js";

/** `StepStatus.COMPLETED` → `completed` (protobuf-es names enum values without their `STEP_STATUS_` prefix). */
function enumWord(names: Record<number, string>, prefix: string, value: number): string {
  const name = names[value];
  if (name === undefined || value === 0) return "unknown";
  return (name.startsWith(prefix) ? name.slice(prefix.length) : name).toLowerCase();
}

export const taskStatusWord = (s: TaskStatus) => enumWord(TaskStatus, "TASK_STATUS_", s);
export const stepStatusWord = (s: StepStatus) => enumWord(StepStatus, "STEP_STATUS_", s);
export const approvalStatusWord = (s: ApprovalStatus) => enumWord(ApprovalStatus, "APPROVAL_STATUS_", s);

export const TASK_FILTERS: readonly { word: string; value: TaskStatus }[] = [
  TaskStatus.RUNNING,
  TaskStatus.PARKED,
  TaskStatus.COMPLETED,
  TaskStatus.FAILED,
  TaskStatus.CANCELLED,
].map((value) => ({ word: taskStatusWord(value), value }));

export function isFinished(status: TaskStatus): boolean {
  return status === TaskStatus.COMPLETED || status === TaskStatus.FAILED || status === TaskStatus.CANCELLED;
}

export function dateOf(ts: Timestamp | undefined): Date | undefined {
  return ts ? timestampDate(ts) : undefined;
}

export function formatTime(ts: Timestamp | Date | undefined): string {
  const d = ts instanceof Date ? ts : dateOf(ts);
  return d ? d.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" }) : "—";
}

export function formatMs(ms: number | bigint): string {
  return new Date(Number(ms)).toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" });
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatCost(cost: number, budget?: number): string {
  const c = Number.isInteger(cost) ? String(cost) : cost.toFixed(2);
  return budget === undefined ? c : `${c} / ${budget}`;
}

export function jsonOf(value: Value | undefined): JsonValue {
  return value === undefined ? null : toJson(ValueSchema, value);
}

export function shortId(id: string): string {
  return id.length > 12 ? `${id.slice(0, 8)}…` : id;
}
