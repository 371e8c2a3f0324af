/**
 * AuditService: verify the calling tenant's chain (with its signed checkpoints), list its rows, list and export
 * its checkpoints.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { AuditService } from "../../gen/switchyard/api/v1/audit_pb.js";
import { verifyChainWithCheckpoints } from "../../governance/checkpoint-verify.js";
import { exportCheckpoints, listCheckpoints, parseCheckpointLines } from "../../governance/checkpoints.js";
import { withTenantTransaction } from "../../store/tenant-scope.js";
import { tenantCall } from "../auth.js";
import { auditRowToProto, checkpointToProto, verificationToProto } from "../convert/audit.js";
import { int64ToNumber } from "../convert/values.js";
import type { ServiceDeps } from "./deps.js";

export function auditService(deps: ServiceDeps): ServiceImpl<typeof AuditService> {
  return {
    async verify(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const fromFile = req.checkpointsJsonl.trim() !== "" ? parseCheckpointLines(req.checkpointsJsonl) : undefined;
      const result = await withTenantTransaction(deps.pool, orgId, (client) =>
        verifyChainWithCheckpoints(deps.stores, client, orgId, {
          signal: ctx.signal,
          ...(fromFile ? { checkpoints: fromFile } : {}),
          ...(req.checkpointsSource !== "" ? { source: req.checkpointsSource } : {}),
        }),
      );
      return verificationToProto(orgId, result);
    },

    async listRows(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const rows = await withTenantTransaction(deps.pool, orgId, (client) =>
        deps.stores.audit.list(client, orgId, {
          ...(req.limit !== 0 ? { limit: req.limit } : {}),
          ...(req.taskId !== "" ? { taskId: req.taskId } : {}),
          ...(req.afterSeq !== 0n ? { afterSeq: int64ToNumber(req.afterSeq) } : {}),
          ...(req.beforeSeq !== 0n ? { beforeSeq: int64ToNumber(req.beforeSeq) } : {}),
          ...(req.newestFirst ? { newestFirst: true } : {}),
        }),
      );
      return { rows: rows.map(auditRowToProto) };
    },

    async listCheckpoints(_req, ctx) {
      const { orgId } = tenantCall(ctx);
      const checkpoints = await withTenantTransaction(deps.pool, orgId, (client) => listCheckpoints(deps.stores, client, orgId));
      return { checkpoints: checkpoints.map(checkpointToProto) };
    },

    async exportCheckpoints(_req, ctx) {
      const { orgId } = tenantCall(ctx);
      return { jsonl: await withTenantTransaction(deps.pool, orgId, (client) => exportCheckpoints(deps.stores, client, orgId)) };
    },
  };
}
