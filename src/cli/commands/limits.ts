/**
 * `switchyard limits set|clear|list` — dispatch limits (tenant fairness, SRE). A change is stored in table
 * `dispatch_limits`, audited with who and why in the same transaction (action `limit`), and obeyed by running
 * coordinators within about a second.
 *
 * All through AdminService (remote/admin-api.ts: SetDispatchLimit, which answers the audit row too,
 * ClearDispatchLimit and ListDispatchLimits); direct mode records `--actor` as given.
 */
import type { Command } from "commander";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { ActionRunner } from "../action.js";
import { formatTable, formatTime } from "../output.js";
import { describeLimitScope, withAdminApi } from "../remote/admin-api.js";

interface ScopeOptions {
  tenant?: string;
  destination?: string;
  reason: string;
  actor: string;
  json?: boolean;
}

interface SetOptions extends ScopeOptions {
  maxInFlight?: string;
  rate?: string;
  burst?: string;
  weight?: string;
}

function numberOption(value: string | undefined, path: string): number | null {
  if (value === undefined) return null;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) throw new SwitchyardError(ErrorCode.InvalidArgument, `${path} must be a number, got ${JSON.stringify(value)}`, { details: { path } });
  return n;
}

export function registerLimitsCommands(program: Command, run: ActionRunner): void {
  const limits = program.command("limits").description("tenant fairness: destination capacities, tenant weights, caps and rates (audited; in force within ~1 s)");

  /**
   * `limits set [--tenant T] [--destination D] [--max-in-flight N] [--rate R [--burst B]] [--weight W] --reason TEXT`
   * — replaces the limits of the scope: `--destination` alone is the destination's capacity; `--tenant` alone its
   * weight and overall cap; both, the tenant's cap and rate on that destination.
   *
   * Human output: `tenant:acme/role:writer: maxInFlight=3 (by sre: noisy); audit seq 12 in chain acme`
   */
  limits
    .command("set")
    .description("set the limits of a tenant, a destination, or a tenant on a destination")
    .option("--tenant <tenant>", "the tenant")
    .option("--destination <destination>", "role:NAME, team:NAME or foreign:KEY")
    .option("--max-in-flight <n>", "steps in flight at once (a destination's capacity, or the tenant's cap)")
    .option("--rate <perSecond>", "dispatches per second (token bucket; with --tenant and --destination)")
    .option("--burst <n>", "dispatches that may be saved up (default: one second's worth)")
    .option("--weight <n>", "the tenant's share of a contended destination (1–1000, default 1)")
    .requiredOption("--reason <text>", "why (recorded in the audit log)")
    .option("--actor <actor>", "who (recorded in the audit log)", "cli")
    .option("--json", "print the stored row as JSON")
    .action(
      run(async (ctx, options: SetOptions) => {
        const limit = {
          orgId: options.tenant?.trim() ?? "",
          destination: options.destination?.trim() ?? "",
          maxInFlight: numberOption(options.maxInFlight, "--max-in-flight"),
          ratePerSec: numberOption(options.rate, "--rate"),
          burst: numberOption(options.burst, "--burst"),
          weight: numberOption(options.weight, "--weight"),
        };
        const row = await withAdminApi(ctx, (api) => api.setDispatchLimit(limit, { actor: options.actor, reason: options.reason }));
        const { audit, ...stored } = row;
        if (options.json) return ctx.printJson({ ...stored, audit: { orgId: audit.orgId, seq: audit.seq } });
        ctx.print(`${describeLimitScope(row.orgId, row.destination)}: ${audit.rule} (by ${row.updatedBy}: ${row.reason}); audit seq ${audit.seq} in chain ${audit.orgId}`);
      }),
    );

  limits
    .command("clear")
    .description("remove the limits of a scope")
    .option("--tenant <tenant>", "the tenant")
    .option("--destination <destination>", "role:NAME, team:NAME or foreign:KEY")
    .requiredOption("--reason <text>", "why (recorded in the audit log)")
    .option("--actor <actor>", "who (recorded in the audit log)", "cli")
    .action(
      run(async (ctx, options: ScopeOptions) => {
        const scope = { orgId: options.tenant?.trim() ?? "", destination: options.destination?.trim() ?? "" };
        const cleared = await withAdminApi(ctx, (api) => api.clearDispatchLimit(scope, { actor: options.actor, reason: options.reason }));
        ctx.print(cleared ? `${describeLimitScope(scope.orgId, scope.destination)}: limits cleared` : `${describeLimitScope(scope.orgId, scope.destination)} had no limits`);
      }),
    );

  /** `limits list [--json]` — every stored limit. JSON: `[{"orgId","destination","maxInFlight","ratePerSec","burst","weight","updatedBy","reason","updatedAt"}]` */
  limits
    .command("list")
    .description("show every dispatch limit")
    .option("--json", "print the limits as JSON")
    .action(
      run(async (ctx, options: { json?: boolean }) => {
        const rows = await withAdminApi(ctx, (api) => api.listDispatchLimits());
        if (options.json) return ctx.printJson(rows);
        ctx.print(
          formatTable(
            ["scope", "max in flight", "rate/s", "burst", "weight", "updated", "by", "reason"],
            rows.map((r) => [describeLimitScope(r.orgId, r.destination), r.maxInFlight, r.ratePerSec, r.burst, r.weight, formatTime(r.updatedAt), r.updatedBy, r.reason]),
          ),
        );
      }),
    );
}
