/**
 * ApprovalService: list and decide the calling tenant's approvals; its signed links and their keys are
 * approval-links.ts.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { ApprovalService } from "../../gen/switchyard/api/v1/approvals_pb.js";
import { withTenantTransaction } from "../../store/tenant-scope.js";
import { callActor, callChannel, tenantCall } from "../auth.js";
import { approvalStatuses, approvalToProto } from "../convert/approvals.js";
import { approvalLinkHandlers } from "./approval-links.js";
import type { ServiceDeps } from "./deps.js";

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function approvalService(deps: ServiceDeps): ServiceImpl<typeof ApprovalService> {
  return {
    async list(req, ctx) {
      const { orgId } = tenantCall(ctx);
      if (req.taskId !== "" && !UUID_RE.test(req.taskId)) {
        throw new SwitchyardError(ErrorCode.InvalidArgument, "task_id: expected a task id (UUID)", { details: { path: "task_id" } });
      }
      const status = approvalStatuses.fromProtoOptional(req.status);
      const rows = await withTenantTransaction(deps.pool, orgId, (client) =>
        deps.stores.approvals.list(client, orgId, { ...(status ? { status } : {}), ...(req.taskId !== "" ? { taskId: req.taskId.toLowerCase() } : {}) }),
      );
      return { approvals: rows.map(approvalToProto) };
    },

    async decide(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const outcome = await deps.tasks.decideApproval({
        orgId,
        approvalId: req.id,
        approve: req.approve,
        actor: callActor(ctx, req.actor),
        ...(req.reason !== "" ? { reason: req.reason } : {}),
        via: callChannel(ctx),
      });
      return { approvalId: req.id, status: approvalStatuses.toProto(outcome.status), decidedBy: outcome.decidedBy, alreadyDecided: outcome.alreadyDecided };
    },

    ...approvalLinkHandlers(deps),
  };
}
