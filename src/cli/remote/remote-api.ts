/**
 * TenantApi as a client of the Connect services, for both modes: through a Switchyard gateway (remote mode, binary
 * protobuf over HTTP) or through the same handlers run in-process (direct mode: direct-transport.ts). Errors come
 * back as the SwitchyardError the handler raised — remotely rebuilt from the ErrorDetail (code, message, details),
 * in-process the very error — so the CLI prints and exits the same way in both; network failures are UNAVAILABLE
 * naming the URL.
 */
import type { ReplyOutcome } from "../../core/reply-types.js";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { ApprovalService, ApprovalStatus } from "../../gen/switchyard/api/v1/approvals_pb.js";
import { AuditService } from "../../gen/switchyard/api/v1/audit_pb.js";
import { ErrorDetailSchema } from "../../gen/switchyard/api/v1/errors_pb.js";
import { TaskService } from "../../gen/switchyard/api/v1/tasks_pb.js";
import { WorkflowService } from "../../gen/switchyard/api/v1/workflows_pb.js";
import { operatorActorHeader } from "../../gateway/auth.js";
import { approvalFromProto, approvalStatuses } from "../../gateway/convert/approvals.js";
import { auditRowFromProto, checkpointFromProto, verificationFromProto } from "../../gateway/convert/audit.js";
import { taskFromProto, taskStatuses, taskSummaryFromProto } from "../../gateway/convert/tasks.js";
import { isoFromTimestamp, toTimestamp, toValue } from "../../gateway/convert/values.js";
import { workflowFromProto, workflowSummaryFromProto } from "../../gateway/convert/workflows.js";
import { parseWorkflowDefinition } from "../../workflow/definition.js";
import { inFile } from "../args.js";
import type { RemoteTarget, TenantApi } from "./tenant-api.js";
import { createApiTransport } from "./transport.js";

/** Connect codes with no finer Switchyard code attached (auth, transport) → the CLI's codes. */
const FALLBACK_CODES: Partial<Record<Code, ErrorCode>> = {
  [Code.InvalidArgument]: ErrorCode.InvalidArgument,
  [Code.NotFound]: ErrorCode.NotFound,
  [Code.AlreadyExists]: ErrorCode.AlreadyExists,
  [Code.FailedPrecondition]: ErrorCode.FailedPrecondition,
  [Code.ResourceExhausted]: ErrorCode.PayloadTooLarge,
  [Code.Unavailable]: ErrorCode.Unavailable,
  [Code.DeadlineExceeded]: ErrorCode.Timeout,
  [Code.Canceled]: ErrorCode.Cancelled,
};

/** What the gateway said, as the SwitchyardError direct mode would have thrown. */
export function switchyardErrorOf(error: unknown, url: string): SwitchyardError {
  if (error instanceof SwitchyardError) return error;
  const connect = ConnectError.from(error);
  const [detail] = connect.findDetails(ErrorDetailSchema);
  if (detail?.code) {
    return new SwitchyardError(detail.code as ErrorCode, connect.rawMessage, { cause: error, details: (detail.details ?? {}) as Record<string, unknown> });
  }
  if (connect.code === Code.Unauthenticated || connect.code === Code.PermissionDenied) {
    // Not a usage error, not "internal": the key is wrong for this. Say which setting to fix.
    return new SwitchyardError(ErrorCode.FailedPrecondition, `${url} refused the API key: ${connect.rawMessage} (check --token / SWITCHYARD_TOKEN)`, {
      cause: error,
      details: { connectCode: Code[connect.code] },
    });
  }
  if (connect.code === Code.Unavailable || connect.code === Code.Unknown || connect.code === Code.Internal) {
    const unreachable = connect.code !== Code.Internal && /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|ECONNRESET|fetch failed|socket/i.test(`${connect.rawMessage} ${String((connect.cause as Error | undefined)?.message ?? "")}`);
    if (unreachable) return new SwitchyardError(ErrorCode.Unavailable, `cannot reach the gateway at ${url}: ${connect.rawMessage}`, { cause: error });
  }
  return new SwitchyardError(FALLBACK_CODES[connect.code] ?? ErrorCode.Internal, connect.rawMessage, { cause: error, details: { connectCode: Code[connect.code] } });
}

/**
 * Runs one client call, turning what the other side (`where`: a URL, or direct mode) threw into a SwitchyardError.
 * What is not a ConnectError was thrown in this process (direct mode: a handler's own error, or opening the
 * runtime) and goes on as it is, so the CLI's error reporting (output.ts `toCliError`) still sees a Postgres code
 * such as "database does not exist" and says to run migrate, instead of an INTERNAL made of its message.
 */
export function callerAt(where: string): <T>(work: () => Promise<T>) => Promise<T> {
  return async (work) => {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof ConnectError)) throw error;
      throw switchyardErrorOf(error, where);
    }
  };
}

export function createRemoteTenantApi(target: RemoteTarget, tenant: string | undefined): TenantApi {
  const transport = createApiTransport({ url: target.url, token: target.token, ...(tenant ? { tenant } : {}) });
  // Connect's Node transport keeps no connection that needs closing per command.
  return createClientTenantApi(transport, { mode: "remote", where: target.url, close: async () => {} });
}

export interface ClientTenantApiOptions {
  mode: TenantApi["mode"];
  /** Names the other side in errors that are about reaching it (the gateway's URL). */
  where: string;
  /** Closes what the transport opened. */
  close(): Promise<void>;
}

/** The TenantApi over any transport to the tenant services. */
export function createClientTenantApi(transport: Transport, options: ClientTenantApiOptions): TenantApi {
  const target = { url: options.where };
  const workflows = createClient(WorkflowService, transport);
  const tasks = createClient(TaskService, transport);
  const approvals = createClient(ApprovalService, transport);
  const audit = createClient(AuditService, transport);
  const call = callerAt(target.url);

  return {
    mode: options.mode,
    async submitWorkflow(file) {
      // Direct mode runs this very parser in the handler, so a bad file is refused here without a database (as it
      // always was). Remote mode leaves the verdict to the gateway, whose build may know more or less.
      if (options.mode === "direct") {
        try {
          parseWorkflowDefinition(file.text, file.format ? { format: file.format } : {});
        } catch (error) {
          throw inFile(file.path, error);
        }
      }
      try {
        const res = await call(() => workflows.submit({ source: file.text, format: file.format ?? "" }));
        return { name: res.name, version: res.version, ref: res.ref, digest: res.digest, created: res.created };
      } catch (error) {
        // As in direct mode: a validation problem is reported against the file.
        const validation = error instanceof SwitchyardError && (error.code === ErrorCode.InvalidWorkflow || error.code === ErrorCode.InvalidArgument);
        throw validation ? inFile(file.path, error) : error;
      }
    },
    async getWorkflow(ref) {
      return workflowFromProto((await call(() => workflows.get({ ref }))).workflow!);
    },
    async listWorkflows() {
      return (await call(() => workflows.list({}))).workflows.map(workflowSummaryFromProto);
    },
    async startTask(request) {
      const started = await call(() =>
        tasks.start({ workflow: request.workflow, ...(request.input !== undefined ? { input: toValue(request.input) } : {}), idempotencyKey: request.idempotencyKey ?? "" }),
      );
      return { taskId: started.task!.id, created: started.created, workflow: started.task!.workflow };
    },
    async getTask(id) {
      return taskFromProto((await call(() => tasks.get({ id }))).task!);
    },
    async explainTask(id) {
      return (await call(() => tasks.explain({ id }))).lines;
    },
    async *watchTask(id, signal) {
      try {
        for await (const res of tasks.watch({ id }, { signal })) yield taskFromProto(res.task!);
      } catch (error) {
        if (!(error instanceof ConnectError)) throw error; // thrown in this process: see callerAt
        throw switchyardErrorOf(error, target.url);
      }
    },
    async cancelTask(id, actor, reason) {
      const res = await call(() => tasks.cancel({ id, actor, reason }));
      return { task: taskFromProto(res.task!), alreadyFinished: res.alreadyFinished };
    },
    async replyTask(request) {
      // A gateway records the API key's identity as the actor; the CLI's --actor is not sent. In direct mode the
      // operator is recorded as it names itself, as it always was (gateway/auth.ts `callActor`).
      const header = options.mode === "direct" ? { headers: operatorActorHeader(request.actor) } : {};
      const res = await call(() => tasks.reply({ taskId: request.taskId, text: request.text, idempotencyKey: request.idempotencyKey ?? "" }, header));
      return {
        status: res.status as ReplyOutcome["status"],
        replyId: res.replyId,
        ...(res.code ? { code: res.code } : {}),
        ...(res.message ? { message: res.message } : {}),
        ...(res.permalink ? { permalink: res.permalink } : {}),
        ...(res.approvalId ? { approvalId: res.approvalId } : {}),
      };
    },
    async listTasks(filter) {
      const res = await call(() =>
        tasks.list({
          statuses: (filter.statuses ?? []).map((s) => taskStatuses.toProto(s)),
          workflow: filter.workflow ?? "",
          pageSize: filter.pageSize ?? 0,
          pageToken: filter.pageToken ?? "",
          ...(filter.createdAfter ? { createdAfter: toTimestamp(filter.createdAfter) } : {}),
          ...(filter.createdBefore ? { createdBefore: toTimestamp(filter.createdBefore) } : {}),
        }),
      );
      return { tasks: res.tasks.map(taskSummaryFromProto), nextPageToken: res.nextPageToken || null };
    },
    async listApprovals(filter) {
      const res = await call(() =>
        approvals.list({ status: filter.status ? approvalStatuses.toProto(filter.status) : ApprovalStatus.UNSPECIFIED, taskId: filter.taskId ?? "" }),
      );
      return res.approvals.map(approvalFromProto);
    },
    async decideApproval(request) {
      const res = await call(() => approvals.decide({ id: request.approvalId, approve: request.approve, actor: request.actor, reason: request.reason ?? "" }));
      return { status: approvalStatuses.fromProto(res.status) as "approved" | "denied", decidedBy: res.decidedBy, alreadyDecided: res.alreadyDecided };
    },
    async createApprovalLinks(request) {
      const res = await call(() =>
        approvals.createLinks({
          approvalId: request.approvalId,
          ...(request.baseUrl !== undefined ? { baseUrl: request.baseUrl } : {}),
          ...(request.ttlMs !== undefined ? { ttlMs: BigInt(request.ttlMs) } : {}),
        }),
      );
      return { approveUrl: res.approveUrl, denyUrl: res.denyUrl, expiresAt: isoFromTimestamp(res.expiresAt) ?? "", kid: res.kid };
    },
    async listLinkKeys() {
      const res = await call(() => approvals.listLinkKeys({}));
      return res.keys.map((k) => ({ kid: k.kid, createdAt: isoFromTimestamp(k.createdAt) ?? "", retiredAt: isoFromTimestamp(k.retiredAt), signing: k.signing }));
    },
    async rotateLinkKey() {
      return (await call(() => approvals.rotateLinkKey({}))).kid;
    },
    async retireLinkKey(kid) {
      const res = await call(() => approvals.retireLinkKey({ kid }));
      return { kid: res.kid, retiredAt: isoFromTimestamp(res.retiredAt) ?? "" };
    },
    async verifyAudit(options) {
      const checkpoints = options.checkpoints;
      return verificationFromProto(await call(() => audit.verify(checkpoints ? { checkpointsJsonl: checkpoints.text, checkpointsSource: checkpoints.source } : {})));
    },
    async listAudit(options) {
      const res = await call(() =>
        audit.listRows({ taskId: options.taskId ?? "", afterSeq: BigInt(options.afterSeq ?? 0), limit: options.limit ?? 0 }),
      );
      return res.rows.map(auditRowFromProto);
    },
    async listCheckpoints() {
      return (await call(() => audit.listCheckpoints({}))).checkpoints.map(checkpointFromProto);
    },
    close: options.close,
  };
}
