/**
 * `switchyard approval list|approve|deny` — the human decisions that parked steps wait for.
 */
import { InvalidArgumentError, type Command } from "commander";
import { listApprovals, type ApprovalRow } from "../../coordinator/approval-store.js";
import { requireTenant, uuidOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import type { CliContext } from "../context.js";
import { formatTable, formatTime } from "../output.js";

const STATUSES = ["pending", "approved", "denied", "all"] as const;
type StatusFilter = (typeof STATUSES)[number];

function statusOption(value: string): StatusFilter {
  if (!(STATUSES as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${STATUSES.join(", ")}`);
  return value as StatusFilter;
}

interface DecideOptions {
  tenant: string;
  actor: string;
  reason?: string;
  json?: boolean;
}

export function registerApprovalCommands(program: Command, run: ActionRunner): void {
  const approval = program.command("approval").description("list and decide approvals of parked steps");

  /**
   * `approval list --tenant T [--status pending|approved|denied|all] [--task ID] [--json]` (default: pending),
   * oldest first.
   *
   * JSON: `{"approvals":[{"id":"<uuid>","orgId":"T","taskId":"<uuid>","stepId":"publish","action":"dispatch",
   * "destination":"role:publisher","rule":"builtin:approval-hint","reason":"…","cost":1,
   * "status":"pending|approved|denied","decidedBy":"…"|null,"decisionReason":"…"|null,
   * "createdAt":"<ISO 8601>","decidedAt":"<ISO 8601>"|null}]}`
   */
  approval
    .command("list")
    .description("list approvals (default: pending ones)")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--status <status>", `one of ${STATUSES.join(", ")}`, statusOption, "pending")
    .option("--task <id>", "only this task's approvals", uuidOption)
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant: string; status: StatusFilter; task?: string; json?: boolean }) => {
        const tenant = requireTenant(options.tenant);
        const rows = await ctx.withPool((pool) =>
          listApprovals(pool, tenant, {
            ...(options.status !== "all" ? { status: options.status } : {}),
            ...(options.task !== undefined ? { taskId: options.task } : {}),
          }),
        );
        if (options.json) return ctx.printJson({ approvals: rows });
        printApprovals(ctx, rows);
      }),
    );

  for (const verb of ["approve", "deny"] as const) {
    /**
     * `approval approve|deny ID --tenant T [--actor A] [--reason R] [--json]` — decides a pending approval.
     * Idempotent: deciding again (either way) changes nothing, prints `already decided: approved by X` and exits 0.
     * An unknown id exits 1 with NOT_FOUND.
     *
     * JSON: `{"approvalId":"<uuid>","status":"approved|denied","decidedBy":"A","alreadyDecided":false}`
     */
    approval
      .command(verb)
      .description(verb === "approve" ? "approve a pending approval; the parked step continues" : "deny a pending approval; the parked step fails")
      .argument("<id>", "approval id")
      .requiredOption("--tenant <tenant>", "tenant (org id)")
      .option("--actor <actor>", "who decides (recorded in the audit log)", "cli")
      .option("--reason <reason>", "why (recorded in the audit log)")
      .option("--json", "print the result as JSON")
      .action(
        run(async (ctx, id: string, options: DecideOptions) => {
          const tenant = requireTenant(options.tenant);
          const outcome = await ctx.withRuntime((runtime) =>
            runtime.tasks.decideApproval({
              orgId: tenant,
              approvalId: id,
              approve: verb === "approve",
              actor: options.actor,
              ...(options.reason !== undefined ? { reason: options.reason } : {}),
            }),
          );
          if (options.json) return ctx.printJson({ approvalId: id, ...outcome });
          ctx.print(outcome.alreadyDecided ? `already decided: ${outcome.status} by ${outcome.decidedBy}` : `${outcome.status} approval ${id} as ${outcome.decidedBy}`);
        }),
      );
  }
}

export function printApprovals(ctx: CliContext, rows: readonly ApprovalRow[]): void {
  ctx.print(
    formatTable(
      ["id", "task", "step", "destination", "rule", "status", "decided by", "created"],
      rows.map((a) => [a.id, a.taskId, a.stepId, a.destination, a.rule, a.status, a.decidedBy, formatTime(a.createdAt)]),
    ),
  );
}
