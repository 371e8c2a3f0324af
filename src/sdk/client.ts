/**
 * `switchyard/client`: typed Connect clients for a Switchyard gateway's tenant API, authenticated with an API key.
 *
 * ```ts
 * import { createSwitchyardClient, fromValue, toValue } from "switchyard/client";
 * const sy = createSwitchyardClient({ url: "http://127.0.0.1:8080", token: process.env.SWITCHYARD_TOKEN! });
 * const { task } = await sy.tasks.start({ workflow: "research-report", input: toValue({ topic: "tides" }) });
 * console.log(fromValue(task?.input));
 * ```
 *
 * One transport (src/cli/remote/transport.ts, the CLI's own) is shared by every service client. The message types
 * and service descriptors are re-exported from the generated code, so callers need no path into the package.
 */
import type { Transport } from "@connectrpc/connect";
import { createApiTransport, type ApiTransportOptions } from "../cli/remote/transport.js";
import { AdminService } from "../gen/switchyard/api/v1/admin_pb.js";
import { ApprovalService } from "../gen/switchyard/api/v1/approvals_pb.js";
import { AuditService } from "../gen/switchyard/api/v1/audit_pb.js";
import { ConnectionService } from "../gen/switchyard/api/v1/connections_pb.js";
import { ForeignAgentService } from "../gen/switchyard/api/v1/foreign_pb.js";
import { IngestService } from "../gen/switchyard/api/v1/ingest_pb.js";
import { TaskService } from "../gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../gen/switchyard/api/v1/workflows_pb.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { createServiceClients, type SwitchyardServiceClients } from "./service-clients.js";

export type { SwitchyardServiceClients } from "./service-clients.js";

/** JSON ↔ `google.protobuf.Value` (task input, step output): `tasks.start({ input: toValue({ topic }) })`. */
export { fromValue, toValue } from "../gateway/convert/values.js";

export type SwitchyardClientOptions = ApiTransportOptions;

export interface SwitchyardClient extends SwitchyardServiceClients {
  /** The authenticated transport, for a service this factory does not list. */
  transport: Transport;
}

/** Builds clients for every tenant API service; nothing connects until the first call. */
export function createSwitchyardClient(options: SwitchyardClientOptions): SwitchyardClient {
  if (typeof options?.url !== "string" || !/^https?:\/\//.test(options.url)) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `createSwitchyardClient: url must be the gateway's http(s) base URL, got ${JSON.stringify(options?.url)}`, { details: { path: "url" } });
  }
  if (typeof options.token !== "string" || options.token === "") {
    throw new SwitchyardError(ErrorCode.InvalidArgument, "createSwitchyardClient: token (an API key, sy_…) is required", { details: { path: "token" } });
  }
  const transport = createApiTransport(options);
  return { ...createServiceClients(transport), transport };
}

export { AdminService, ApprovalService, AuditService, ConnectionService, ForeignAgentService, IngestService, TaskService, WorkflowService };
export * from "../gen/switchyard/api/v1/tasks_pb.js";
export * from "../gen/switchyard/api/v1/workflows_pb.js";
export { ConnectError, Code } from "@connectrpc/connect";
