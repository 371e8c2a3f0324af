/**
 * One Connect client per API service over a given transport. Imports nothing but Connect and the generated
 * descriptors, so both the Node SDK (`switchyard/client`, over the CLI's transport) and the browser console
 * (over connect-web) build their clients here.
 */
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { AdminService } from "../gen/switchyard/api/v1/admin_pb.js";
import { ApprovalService } from "../gen/switchyard/api/v1/approvals_pb.js";
import { AuditService } from "../gen/switchyard/api/v1/audit_pb.js";
import { ConnectionService } from "../gen/switchyard/api/v1/connections_pb.js";
import { ForeignAgentService } from "../gen/switchyard/api/v1/foreign_pb.js";
import { IngestService } from "../gen/switchyard/api/v1/ingest_pb.js";
import { TaskService } from "../gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../gen/switchyard/api/v1/workflows_pb.js";

export interface SwitchyardServiceClients {
  tasks: Client<typeof TaskService>;
  workflows: Client<typeof WorkflowService>;
  approvals: Client<typeof ApprovalService>;
  audit: Client<typeof AuditService>;
  connections: Client<typeof ConnectionService>;
  foreignAgents: Client<typeof ForeignAgentService>;
  ingest: Client<typeof IngestService>;
  /** Operator calls: need an admin key (or an admin key's console session). */
  admin: Client<typeof AdminService>;
}

/** Nothing connects until the first call. */
export function createServiceClients(transport: Transport): SwitchyardServiceClients {
  return {
    tasks: createClient(TaskService, transport),
    workflows: createClient(WorkflowService, transport),
    approvals: createClient(ApprovalService, transport),
    audit: createClient(AuditService, transport),
    connections: createClient(ConnectionService, transport),
    foreignAgents: createClient(ForeignAgentService, transport),
    ingest: createClient(IngestService, transport),
    admin: createClient(AdminService, transport),
  };
}
