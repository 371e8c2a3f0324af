/**
 * WorkflowService: submit, get and list the calling tenant's workflow definitions.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { WorkflowService } from "../../gen/switchyard/api/v1/workflows_pb.js";
import { withTenantTransaction } from "../../store/tenant-scope.js";
import { getWorkflow, listWorkflows } from "../../store/workflow-store.js";
import { submitWorkflowAsTenant } from "../../tenancy/scoped-workflows.js";
import { parseWorkflowDefinition } from "../../workflow/definition.js";
import { tenantCall } from "../auth.js";
import { workflowSummaryToProto, workflowToProto } from "../convert/workflows.js";
import type { ServiceDeps } from "./deps.js";

function sourceFormat(format: string): "yaml" | "json" | undefined {
  if (format === "") return undefined;
  if (format === "yaml" || format === "json") return format;
  throw new SwitchyardError(ErrorCode.InvalidArgument, `format: must be "yaml", "json" or empty, got ${JSON.stringify(format)}`, { details: { path: "format" } });
}

export function workflowService(deps: ServiceDeps): ServiceImpl<typeof WorkflowService> {
  return {
    async submit(req, ctx) {
      const { orgId } = tenantCall(ctx);
      if (req.source.trim() === "") throw new SwitchyardError(ErrorCode.InvalidArgument, "source: the workflow definition is empty", { details: { path: "source" } });
      const format = sourceFormat(req.format);
      const definition = parseWorkflowDefinition(req.source, format ? { format } : {});
      return submitWorkflowAsTenant(deps.pool, orgId, definition);
    },
    async get(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const stored = await withTenantTransaction(deps.pool, orgId, (client) => getWorkflow(client, orgId, req.ref));
      return { workflow: workflowToProto(stored) };
    },
    async list(_req, ctx) {
      const { orgId } = tenantCall(ctx);
      const workflows = await withTenantTransaction(deps.pool, orgId, (client) => listWorkflows(client, orgId));
      return { workflows: workflows.map(workflowSummaryToProto) };
    },
  };
}
