/**
 * The Connect services the gateway serves, in one place.
 */
import type { ConnectRouter } from "@connectrpc/connect";
import { AdminService } from "../gen/switchyard/api/v1/admin_pb.js";
import { ApprovalService } from "../gen/switchyard/api/v1/approvals_pb.js";
import { AuditService } from "../gen/switchyard/api/v1/audit_pb.js";
import { CheckpointService } from "../gen/switchyard/api/v1/checkpoints_pb.js";
import { ConnectionService } from "../gen/switchyard/api/v1/connections_pb.js";
import { ForeignAgentService } from "../gen/switchyard/api/v1/foreign_pb.js";
import { IngestService } from "../gen/switchyard/api/v1/ingest_pb.js";
import { TaskService } from "../gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../gen/switchyard/api/v1/workflows_pb.js";
import { adminService } from "./services/admin.js";
import { approvalService } from "./services/approvals.js";
import { auditService } from "./services/audit.js";
import { checkpointService } from "./services/checkpoints.js";
import { connectionService } from "./services/connections.js";
import type { ServiceDeps } from "./services/deps.js";
import { foreignAgentService } from "./services/foreign.js";
import { ingestService } from "./services/ingest.js";
import { taskService } from "./services/tasks.js";
import { workflowService } from "./services/workflows.js";

/** Services only admin keys may call. */
export const ADMIN_SERVICES = [AdminService, CheckpointService] as const;

/** Services that act for one tenant (the auth interceptor resolves it: see `resolveTenantCall`). */
export const TENANT_SERVICES = [WorkflowService, TaskService, ApprovalService, AuditService, ForeignAgentService, ConnectionService, IngestService] as const;

export function registerServices(deps: ServiceDeps): (router: ConnectRouter) => void {
  return (router) => {
    router.service(WorkflowService, workflowService(deps));
    router.service(TaskService, taskService(deps));
    router.service(ApprovalService, approvalService(deps));
    router.service(AuditService, auditService(deps));
    router.service(ForeignAgentService, foreignAgentService(deps));
    router.service(ConnectionService, connectionService(deps));
    router.service(IngestService, ingestService(deps));
    router.service(AdminService, adminService(deps));
    router.service(CheckpointService, checkpointService(deps));
  };
}
