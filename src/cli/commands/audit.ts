/**
 * `switchyard audit verify|list` — the tenant's hash-chained audit log.
 */
import type { Command } from "commander";
import type { AuditRow } from "../../domain.js";
import { listAudit } from "../../governance/audit-log.js";
import { verifyChain } from "../../governance/audit-verify.js";
import { intOption, requireTenant } from "../args.js";
import type { ActionRunner } from "../action.js";
import { CommandExit, type CliContext } from "../context.js";
import { describeVerification, ExitCode, formatTable, formatTime } from "../output.js";

export function registerAuditCommands(program: Command, run: ActionRunner): void {
  const audit = program.command("audit").description("verify and read the tenant's audit chain");

  /**
   * `audit verify --tenant T [--json]` — recomputes the tenant's chain. Exit 0 when intact; exit 1 when broken,
   * naming the first broken seq (`error: AUDIT_BROKEN: … broken at seq N: reason` on stderr in human form).
   *
   * JSON (printed whatever the outcome; the exit code tells which):
   * `{"tenant":"T","ok":true,"rows":42,"headSeq":42}` or
   * `{"tenant":"T","ok":false,"rows":5,"headSeq":42,"firstBroken":{"seq":5,"reason":"…"}}`
   */
  audit
    .command("verify")
    .description("recompute the tenant's audit hash chain and name the first broken row")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant: string; json?: boolean }) => {
        const tenant = requireTenant(options.tenant);
        const result = await ctx.withPool((pool) => verifyChain(pool, tenant));
        if (options.json) ctx.printJson({ tenant, ...result });
        else ctx.print(describeVerification(tenant, result));
        if (!result.ok) {
          if (!options.json) ctx.note(`error: AUDIT_BROKEN: audit chain of tenant ${tenant} is broken at seq ${result.firstBroken!.seq}`);
          throw new CommandExit(ExitCode.Failed);
        }
      }),
    );

  /**
   * `audit list --tenant T [--task ID] [--after SEQ] [--limit N] [--json]` — rows in seq order (default limit 100).
   *
   * JSON: `{"rows":[{"orgId":"T","seq":1,"prevHash":"<hex>","hash":"<hex>","action":"dispatch","actor":"coordinator",
   * "destination":"role:researcher","verdict":"allow","rule":"builtin:default","reason":"…","payloadHash":"<hex>|",
   * "cost":2,"taskId":"<uuid>","stepId":"research","envelopeId":"…","atMs":1714557600000}]}`
   */
  audit
    .command("list")
    .description("list audit rows in seq order")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--task <id>", "only this task's rows")
    .option("--after <seq>", "only rows after this seq (paging)", intOption(0))
    .option("--limit <n>", "at most this many rows (1..10000)", intOption(1), 100)
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant: string; task?: string; after?: number; limit: number; json?: boolean }) => {
        const tenant = requireTenant(options.tenant);
        const rows = await ctx.withPool((pool) =>
          listAudit(pool, tenant, {
            limit: options.limit,
            ...(options.task !== undefined ? { taskId: options.task } : {}),
            ...(options.after !== undefined ? { afterSeq: options.after } : {}),
          }),
        );
        if (options.json) return ctx.printJson({ rows });
        printAuditRows(ctx, rows);
      }),
    );
}

function printAuditRows(ctx: CliContext, rows: readonly AuditRow[]): void {
  ctx.print(
    formatTable(
      ["seq", "time", "action", "actor", "destination", "verdict", "rule", "cost", "task", "step"],
      rows.map((r) => [r.seq, formatTime(r.atMs), r.action, r.actor, r.destination, r.verdict, r.rule, r.cost, r.taskId, r.stepId]),
    ),
  );
}
