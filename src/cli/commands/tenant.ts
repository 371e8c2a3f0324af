/**
 * `switchyard tenant create|list|budget` — operator bootstrap of tenants, through AdminService run in-process
 * against the database (remote/admin-api.ts: no API key is needed to make the first one).
 */
import { InvalidArgumentError, type Command } from "commander";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { ActionRunner } from "../action.js";
import type { CliContext } from "../context.js";
import { formatNumber, formatTable, formatTime } from "../output.js";
import { withAdminApi, type TenantRecord } from "../remote/admin-api.js";
import { apiKeyJson, printNewKey } from "./apikey.js";

function budgetOption(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError("expected a positive number of cost units");
  return n;
}

export function tenantJson(tenant: TenantRecord): Record<string, unknown> {
  return { orgId: tenant.orgId, name: tenant.name, dailyBudget: tenant.dailyBudget, createdAt: tenant.createdAt.toISOString() };
}

export function registerTenantCommands(program: Command, run: ActionRunner): void {
  const tenant = program.command("tenant").description("create and list tenants (operator; direct database access)");

  /**
   * `tenant create ORG [--name NAME] [--daily-budget N] [--key-name K] [--json]` — creates the tenant and its first
   * API key in one transaction. The key is printed ONCE, alone on the last line; only its hash is stored.
   *
   * JSON: `{"tenant":{"orgId","name","dailyBudget","createdAt"},"apiKey":{"id","kind","orgId","name","prefix","createdAt","revokedAt","lastUsedAt"},"key":"sy_…"}`
   */
  tenant
    .command("create")
    .description("create a tenant and its first API key (printed once)")
    .argument("<org>", "tenant id: [a-z0-9][a-z0-9_-]{0,62}")
    .option("--name <name>", "display name (default: the tenant id)")
    .option("--daily-budget <units>", "cost units per UTC day (default: unbounded)", budgetOption)
    .option("--key-name <name>", "name of the first API key", "default")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, org: string, options: { name?: string; dailyBudget?: number; keyName: string; json?: boolean }) => {
        const created = await withAdminApi(ctx, (api) =>
          api.createTenant({ orgId: org, name: options.name ?? org, dailyBudget: options.dailyBudget ?? null, keyName: options.keyName }),
        );
        if (options.json) return ctx.printJson({ tenant: tenantJson(created.tenant), apiKey: apiKeyJson(created.apiKey.key), key: created.apiKey.secret });
        ctx.print(`created tenant ${created.tenant.orgId} (${created.tenant.name})${created.tenant.dailyBudget !== null ? `, daily budget ${formatNumber(created.tenant.dailyBudget)}` : ""}`);
        printNewKey(ctx, created.apiKey);
      }),
    );

  /** `tenant list [--json]` — JSON: `{"tenants":[{"orgId","name","dailyBudget","createdAt"}]}` */
  tenant
    .command("list")
    .description("list tenants")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { json?: boolean }) => {
        const tenants = await withAdminApi(ctx, (api) => api.listTenants());
        if (options.json) return ctx.printJson({ tenants: tenants.map(tenantJson) });
        printTenants(ctx, tenants);
      }),
    );

  /** `tenant budget ORG (--daily N | --none) [--json]` — sets or removes the daily budget (a governor input). */
  tenant
    .command("budget")
    .description("set or remove a tenant's daily budget (cost units per UTC day)")
    .argument("<org>", "tenant id")
    .option("--daily <units>", "the budget", budgetOption)
    .option("--none", "remove the budget (unbounded)")
    .option("--json", "print the tenant as JSON")
    .action(
      run(async (ctx, org: string, options: { daily?: number; none?: boolean; json?: boolean }) => {
        if ((options.daily === undefined) === !options.none) {
          throw new SwitchyardError(ErrorCode.InvalidArgument, "pass exactly one of --daily N or --none", { details: { path: "--daily" } });
        }
        const updated = await withAdminApi(ctx, (api) => api.setTenantBudget(org, options.none ? null : options.daily!));
        if (options.json) return ctx.printJson(tenantJson(updated));
        ctx.print(`tenant ${updated.orgId}: daily budget ${updated.dailyBudget === null ? "unbounded" : formatNumber(updated.dailyBudget)}`);
      }),
    );
}

function printTenants(ctx: CliContext, tenants: readonly TenantRecord[]): void {
  ctx.print(formatTable(["tenant", "name", "daily budget", "created"], tenants.map((t) => [t.orgId, t.name, t.dailyBudget, formatTime(t.createdAt)])));
}
