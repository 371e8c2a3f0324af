/**
 * Approval rows ↔ switchyard.api.v1.Approval.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ApprovalDecisionVia, ApprovalRow } from "../../store/approvals/approval-store.js";
import { ApprovalStatus, type Approval, type ApprovalSchema } from "../../gen/switchyard/api/v1/approvals_pb.js";
import { enumMapping, isoFromTimestamp, toTimestamp } from "./values.js";

const APPROVAL_DECISION_VIAS: readonly ApprovalDecisionVia[] = ["api", "console", "cli", "link", "expiry"];

export const approvalStatuses = enumMapping<ApprovalRow["status"], ApprovalStatus>("approval status", [
  ["pending", ApprovalStatus.PENDING],
  ["approved", ApprovalStatus.APPROVED],
  ["denied", ApprovalStatus.DENIED],
]);

export function approvalToProto(row: ApprovalRow): MessageInitShape<typeof ApprovalSchema> {
  return {
    id: row.id,
    orgId: row.orgId,
    taskId: row.taskId,
    stepId: row.stepId,
    action: row.action,
    destination: row.destination,
    rule: row.rule,
    reason: row.reason,
    cost: row.cost,
    status: approvalStatuses.toProto(row.status),
    ...(row.decidedBy !== null ? { decidedBy: row.decidedBy } : {}),
    ...(row.decisionReason !== null ? { decisionReason: row.decisionReason } : {}),
    createdAt: toTimestamp(row.createdAt),
    decidedAt: toTimestamp(row.decidedAt),
    expiresAt: toTimestamp(row.expiresAt),
    ...(row.decidedVia !== null ? { decidedVia: row.decidedVia } : {}),
  };
}

/** Rebuilds the row exactly as direct mode reads it from the database. */
export function approvalFromProto(approval: Approval): ApprovalRow {
  const via = approval.decidedVia;
  return {
    id: approval.id,
    orgId: approval.orgId,
    taskId: approval.taskId,
    stepId: approval.stepId,
    action: approval.action,
    destination: approval.destination,
    rule: approval.rule,
    reason: approval.reason,
    cost: approval.cost,
    status: approvalStatuses.fromProto(approval.status),
    decidedBy: approval.decidedBy ?? null,
    decisionReason: approval.decisionReason ?? null,
    createdAt: isoFromTimestamp(approval.createdAt) ?? "",
    decidedAt: isoFromTimestamp(approval.decidedAt),
    expiresAt: isoFromTimestamp(approval.expiresAt),
    decidedVia: via !== undefined && (APPROVAL_DECISION_VIAS as readonly string[]).includes(via) ? (via as ApprovalDecisionVia) : null,
  };
}
