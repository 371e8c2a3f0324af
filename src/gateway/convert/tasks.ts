/**
 * TaskView ↔ switchyard.api.v1.Task (and the listing's summary). The proto → domain direction rebuilds exactly
 * the object direct mode reads from the database, key order included, so the CLI prints the same either way.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { StepError, StepStatus, TaskStatus } from "../../core/model.js";
import type { StepView, TaskView } from "../../tasks/tasks.js";
import {
  StepKind,
  StepStatus as ProtoStepStatus,
  TaskStatus as ProtoTaskStatus,
  type Step,
  type Task,
  type TaskError,
  type TaskErrorSchema,
  type TaskSchema,
  type TaskSummary,
  type TaskSummarySchema,
} from "../../gen/switchyard/api/v1/tasks_pb.js";
import type { TaskSummaryView } from "../task-list.js";
import type { ReplyAddressKind } from "../../core/reply-address.js";
import type { ReplyState } from "../../core/reply-types.js";
import type { ReplyView } from "../../store/replies/reply-store.js";
import type { Reply, ReplySchema } from "../../gen/switchyard/api/v1/tasks_pb.js";
import { enumMapping, fromValue, isoFromTimestamp, jsonbKeyOrder, toTimestamp, toValue } from "./values.js";

export const taskStatuses = enumMapping<TaskStatus, ProtoTaskStatus>("task status", [
  ["running", ProtoTaskStatus.RUNNING],
  ["parked", ProtoTaskStatus.PARKED],
  ["completed", ProtoTaskStatus.COMPLETED],
  ["failed", ProtoTaskStatus.FAILED],
  ["cancelled", ProtoTaskStatus.CANCELLED],
]);

export const stepStatuses = enumMapping<StepStatus, ProtoStepStatus>("step status", [
  ["pending", ProtoStepStatus.PENDING],
  ["held", ProtoStepStatus.HELD],
  ["dispatched", ProtoStepStatus.DISPATCHED],
  ["retrying", ProtoStepStatus.RETRYING],
  ["parked", ProtoStepStatus.PARKED],
  ["waiting", ProtoStepStatus.WAITING],
  ["completed", ProtoStepStatus.COMPLETED],
  ["failed", ProtoStepStatus.FAILED],
  ["cancelled", ProtoStepStatus.CANCELLED],
]);

const stepKinds = enumMapping<StepView["kind"], StepKind>("step kind", [
  ["workflow", StepKind.WORKFLOW],
  ["delegation", StepKind.DELEGATION],
]);

type TaskErrorView = (StepError & { stepId?: string }) | null;

function errorToProto(error: TaskErrorView): MessageInitShape<typeof TaskErrorSchema> | undefined {
  if (!error) return undefined;
  return {
    code: error.code,
    message: error.message,
    ...(error.retryable !== undefined ? { retryable: error.retryable } : {}),
    ...(error.stepId !== undefined ? { stepId: error.stepId } : {}),
  };
}

function errorFromProto(error: TaskError | undefined): TaskErrorView {
  if (!error) return null;
  return jsonbKeyOrder({
    code: error.code,
    message: error.message,
    ...(error.retryable !== undefined ? { retryable: error.retryable } : {}),
    ...(error.stepId !== undefined ? { stepId: error.stepId } : {}),
  });
}

export function taskToProto(view: TaskView): MessageInitShape<typeof TaskSchema> {
  return {
    id: view.id,
    orgId: view.orgId,
    workflow: view.workflow,
    status: taskStatuses.toProto(view.status),
    input: toValue(view.input),
    cost: view.cost,
    ...(view.budget !== null ? { budget: view.budget } : {}),
    error: errorToProto(view.error),
    createdAt: toTimestamp(view.createdAt),
    finishedAt: toTimestamp(view.finishedAt),
    steps: view.steps.map((s) => ({
      id: s.id,
      kind: stepKinds.toProto(s.kind),
      status: stepStatuses.toProto(s.status),
      destination: s.destination,
      attempts: s.attempts,
      cost: s.cost,
      output: toValue(s.output),
      error: errorToProto(s.error),
      ...(s.approvalId !== null ? { approvalId: s.approvalId } : {}),
      awaiting: s.awaiting.map((a) => ({ correlationId: a.correlationId, delegateStepId: a.delegateStepId, arrived: a.arrived })),
      ...(s.queuedReason !== undefined ? { queuedReason: s.queuedReason } : {}),
    })),
    ...(view.replyTo ? { replyTo: { kind: view.replyTo.kind, display: view.replyTo.display } } : {}),
    replies: view.replies.map(replyToProto),
  };
}

function replyToProto(r: ReplyView): MessageInitShape<typeof ReplySchema> {
  return {
    id: r.id,
    state: r.state,
    ...(r.code !== null ? { code: r.code } : {}),
    ...(r.message !== null ? { message: r.message } : {}),
    ...(r.permalink !== null ? { permalink: r.permalink } : {}),
    ...(r.addressDisplay !== null ? { addressDisplay: r.addressDisplay } : {}),
    actor: r.actor,
    ...(r.stepId !== null ? { stepId: r.stepId } : {}),
    createdAt: toTimestamp(r.createdAt),
    finishedAt: toTimestamp(r.finishedAt),
  };
}

function replyFromProto(r: Reply): ReplyView {
  return {
    id: r.id,
    state: r.state as ReplyState,
    code: r.code ?? null,
    message: r.message ?? null,
    permalink: r.permalink ?? null,
    addressDisplay: r.addressDisplay ?? null,
    actor: r.actor,
    stepId: r.stepId ?? null,
    createdAt: isoFromTimestamp(r.createdAt) ?? "",
    finishedAt: isoFromTimestamp(r.finishedAt),
  };
}

export function taskFromProto(task: Task): TaskView {
  return {
    id: task.id,
    orgId: task.orgId,
    workflow: task.workflow,
    status: taskStatuses.fromProto(task.status),
    input: fromValue(task.input),
    cost: task.cost,
    budget: task.budget ?? null,
    error: errorFromProto(task.error),
    createdAt: isoFromTimestamp(task.createdAt) ?? "",
    finishedAt: isoFromTimestamp(task.finishedAt),
    steps: task.steps.map(stepFromProto),
    replyTo: task.replyTo ? { kind: task.replyTo.kind as ReplyAddressKind, display: task.replyTo.display } : null,
    replies: task.replies.map(replyFromProto),
  };
}

function stepFromProto(step: Step): StepView {
  return {
    id: step.id,
    kind: stepKinds.fromProto(step.kind),
    status: stepStatuses.fromProto(step.status),
    destination: step.destination,
    attempts: step.attempts,
    cost: step.cost,
    output: fromValue(step.output),
    error: errorFromProto(step.error),
    approvalId: step.approvalId ?? null,
    awaiting: step.awaiting.map((a) => ({ correlationId: a.correlationId, delegateStepId: a.delegateStepId, arrived: a.arrived })),
    ...(step.queuedReason !== undefined ? { queuedReason: step.queuedReason } : {}),
  };
}

export function taskSummaryToProto(view: TaskSummaryView): MessageInitShape<typeof TaskSummarySchema> {
  return {
    id: view.id,
    workflow: view.workflow,
    status: taskStatuses.toProto(view.status),
    cost: view.cost,
    ...(view.budget !== null ? { budget: view.budget } : {}),
    error: errorToProto(view.error),
    createdAt: toTimestamp(view.createdAt),
    finishedAt: toTimestamp(view.finishedAt),
  };
}

export function taskSummaryFromProto(summary: TaskSummary): TaskSummaryView {
  return {
    id: summary.id,
    workflow: summary.workflow,
    status: taskStatuses.fromProto(summary.status),
    cost: summary.cost,
    budget: summary.budget ?? null,
    error: errorFromProto(summary.error),
    createdAt: isoFromTimestamp(summary.createdAt) ?? "",
    finishedAt: isoFromTimestamp(summary.finishedAt),
  };
}
