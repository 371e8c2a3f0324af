/**
 * AdminService's tenant policy calls (SetTenantPolicy, GetTenantPolicy): the operator's `switchyard policy set|get`.
 * A policy version is not audited — storing one never was — and running coordinators pick it up through their
 * PolicyCache within its TTL (about a second), as they always did.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { AdminService } from "../../gen/switchyard/api/v1/admin_pb.js";
import { BUILTIN_DEFAULT_DOCUMENT } from "../../governance/default-policy.js";
import { getPolicy, putPolicy } from "../../governance/policy-store.js";
import { requireTenantRecord } from "../../tenancy/tenants.js";
import { adminCall } from "../auth.js";
import type { ServiceDeps } from "./deps.js";

export type AdminPolicyHandlers = Pick<ServiceImpl<typeof AdminService>, "setTenantPolicy" | "getTenantPolicy">;

export function adminPolicyHandlers(deps: ServiceDeps): AdminPolicyHandlers {
  return {
    async setTenantPolicy(req, ctx) {
      const admin = adminCall(ctx);
      if (req.orgId === "") throw new SwitchyardError(ErrorCode.InvalidArgument, "org_id: required", { details: { path: "org_id" } });
      // The tenant first: a mistyped tenant is NOT_FOUND even when the document is invalid too.
      await requireTenantRecord(deps.stores.tenants, deps.pool, req.orgId);
      // An invalid document is INVALID_POLICY with the field path in the document as its `path` detail.
      const { version } = await putPolicy(deps.stores.policies, deps.pool, req.orgId, req.source);
      deps.logger.info({ orgId: req.orgId, version, key: admin.keyPrefix }, "tenant policy stored through the admin API");
      return { version };
    },

    async getTenantPolicy(req, ctx) {
      adminCall(ctx);
      // A tenant unknown or without a policy of its own gets the built-in default, as the governor does.
      const stored = await getPolicy(deps.stores.policies, deps.pool, req.orgId);
      const document = stored?.compiled.document ?? BUILTIN_DEFAULT_DOCUMENT;
      // Through JSON: the normalized document is JSON-safe but may hold `undefined` members a Struct cannot carry.
      return { ...(stored ? { version: stored.version } : {}), builtin: stored === null, document: JSON.parse(JSON.stringify(document)) as JsonObject };
    },
  };
}
