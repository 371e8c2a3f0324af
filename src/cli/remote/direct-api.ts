/**
 * TenantApi straight against the database, as the CLI has always worked: connections are opened on first use
 * (a small pool for reads, the full runtime — with Redis — only to start, cancel or decide) and closed at the end.
 * What creates a tenant's data from nothing (a workflow, a task) needs the tenant to exist, as through the API: a
 * mistyped `--tenant` must not quietly start a second tenant.
 */
import { getTaskView } from "../../tasks/tasks.js";
import { listApprovals } from "../../coordinator/approval-store.js";
import { listAudit } from "../../governance/audit-log.js";
import { verifyChainWithCheckpoints } from "../../governance/checkpoint-verify.js";
import { silentLogger } from "../../logger.js";
import type { Runtime } from "../../runtime.js";
import type { Pool } from "../../store/db.js";
import { getWorkflow, listWorkflows, submitWorkflow } from "../../store/workflow-store.js";
import { listTasks } from "../../gateway/task-list.js";
import { parseWorkflowDefinition, workflowToSource } from "../../workflow/definition.js";
import { requireTenantRecord } from "../../tenancy/tenants.js";
import { inFile } from "../args.js";
import { openRuntime, type CliContext } from "../context.js";
import type { TenantApi } from "./tenant-api.js";

export function createDirectTenantApi(ctx: CliContext, tenant: string): TenantApi {
  let pool: Promise<Pool> | undefined;
  let runtime: Promise<Runtime> | undefined;

  const openPool = (): Promise<Pool> =>
    (pool ??= ctx.openPool());
  const openRuntimeOnce = (): Promise<Runtime> => (runtime ??= openRuntime(ctx.config, { logger: silentLogger, poolSize: 2, longRunning: false, endpoints: ctx.endpoints }));
  /** Reads go through the runtime's pool when it is open anyway, else through the small one. */
  const reader = async () => (runtime ? (await runtime).pool : openPool());

  return {
    mode: "direct",
    async submitWorkflow(file) {
      let definition;
      try {
        definition = parseWorkflowDefinition(file.text, file.format ? { format: file.format } : {});
      } catch (error) {
        throw inFile(file.path, error);
      }
      const pool = await openPool();
      await requireTenantRecord(pool, tenant);
      return submitWorkflow(pool, tenant, definition);
    },
    async getWorkflow(ref) {
      const stored = await getWorkflow(await reader(), tenant, ref);
      return { name: stored.name, version: stored.version, ref: stored.ref, digest: stored.digest, createdAt: stored.createdAt, definition: workflowToSource(stored.definition) };
    },
    async listWorkflows() {
      return listWorkflows(await reader(), tenant);
    },
    async startTask(request) {
      const opened = await openRuntimeOnce();
      await requireTenantRecord(opened.pool, tenant);
      return opened.tasks.start({ orgId: tenant, ...request });
    },
    async getTask(id) {
      return getTaskView(await reader(), tenant, id);
    },
    async cancelTask(id, actor, reason) {
      const tasks = (await openRuntimeOnce()).tasks;
      const before = await tasks.get(tenant, id);
      if (["completed", "failed", "cancelled"].includes(before.status)) return { task: before, alreadyFinished: true };
      return { task: await tasks.cancel(tenant, id, actor, reason), alreadyFinished: false };
    },
    async replyTask(request) {
      const tasks = (await openRuntimeOnce()).tasks;
      return tasks.reply({ orgId: tenant, ...request });
    },
    async listTasks(filter) {
      return listTasks(await reader(), tenant, filter);
    },
    async listApprovals(filter) {
      return listApprovals(await reader(), tenant, filter);
    },
    async decideApproval(request) {
      return (await openRuntimeOnce()).tasks.decideApproval({ orgId: tenant, ...request, via: "cli" });
    },
    async verifyAudit(options) {
      const checkpoints = options.checkpoints;
      const result = await verifyChainWithCheckpoints(await reader(), tenant, checkpoints ? { checkpoints: checkpoints.parsed, source: checkpoints.source } : {});
      return { tenant, result };
    },
    async listAudit(options) {
      return listAudit(await reader(), tenant, options);
    },
    async close() {
      await Promise.allSettled([
        pool?.then((p) => p.end()).catch(() => {}),
        runtime?.then((r) => r.close()).catch(() => {}),
      ]);
    },
  };
}
