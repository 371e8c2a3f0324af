/**
 * ApprovalService's link part: signed one-click approve and deny links for the calling tenant's pending approvals,
 * and the tenant's link keys. `link_keys` is not visible to the tenant role, so these run on the owner's pool,
 * every read and write naming the call's tenant.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { createApprovalLinks } from "../../approvals/link-signing.js";
import type { ApprovalService } from "../../gen/switchyard/api/v1/approvals_pb.js";
import { tenantCall } from "../auth.js";
import { int64ToNumber, toTimestamp } from "../convert/values.js";
import type { ServiceDeps } from "./deps.js";

type LinkHandlers = Pick<ServiceImpl<typeof ApprovalService>, "createLinks" | "listLinkKeys" | "rotateLinkKey" | "retireLinkKey">;

export function approvalLinkHandlers(deps: ServiceDeps): LinkHandlers {
  return {
    async createLinks(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const links = await createApprovalLinks(deps.stores, deps.pool, {
        orgId,
        approvalId: req.approvalId,
        baseUrl: req.baseUrl ?? deps.publicUrl,
        ...(req.ttlMs !== undefined ? { ttlMs: int64ToNumber(req.ttlMs) } : {}),
      });
      return { approveUrl: links.approveUrl, denyUrl: links.denyUrl, expiresAt: toTimestamp(links.expiresAt), kid: links.kid };
    },

    async listLinkKeys(_req, ctx) {
      const { orgId } = tenantCall(ctx);
      const keys = await deps.stores.linkKeys.list(deps.pool, orgId);
      return { keys: keys.map((k) => ({ kid: k.kid, createdAt: toTimestamp(k.createdAt), retiredAt: toTimestamp(k.retiredAt), signing: k.signing })) };
    },

    async rotateLinkKey(_req, ctx) {
      const { orgId } = tenantCall(ctx);
      return { kid: await deps.stores.linkKeys.rotate(deps.pool, orgId) };
    },

    async retireLinkKey(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const retired = await deps.stores.linkKeys.retire(deps.pool, orgId, req.kid);
      return { kid: retired.kid, retiredAt: toTimestamp(retired.retiredAt) };
    },
  };
}
