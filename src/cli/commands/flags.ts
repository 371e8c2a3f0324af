/**
 * `switchyard flags set|list` — the live flags (SRE). A change is stored in table `flags`, audited with who and
 * why in the same transaction, and obeyed by running coordinators and harnesses within about a second.
 *
 * Both through AdminService (remote/admin-api.ts: SetFlag, which answers the audit row too, and ListFlags); direct
 * mode records `--actor` as given.
 */
import type { Command } from "commander";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { ActionRunner } from "../action.js";
import { formatTable, formatTime } from "../output.js";
import { describeScope, FLAG_NAMES, SYSTEM_CHAIN, withAdminApi, type ScopeKind } from "../remote/admin-api.js";

interface SetOptions {
  tenant?: string;
  role?: string;
  team?: string;
  reason: string;
  actor: string;
  json?: boolean;
}

/** `--tenant` / `--role` / `--team` (at most one) → scope kind and scope; none → global. */
function scopeOf(options: SetOptions): { scopeKind: ScopeKind; scope: string } {
  const given = (["tenant", "role", "team"] as const).filter((kind) => options[kind] !== undefined);
  if (given.length > 1) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `pass at most one of --tenant, --role, --team (got ${given.map((g) => `--${g}`).join(", ")})`, {
      details: { path: `--${given[1]}` },
    });
  }
  const kind = given[0];
  return kind ? { scopeKind: kind, scope: options[kind]!.trim() } : { scopeKind: "global", scope: "" };
}

function onOff(value: string): boolean {
  const text = value.trim().toLowerCase();
  if (text === "on" || text === "true") return true;
  if (text === "off" || text === "false") return false;
  throw new SwitchyardError(ErrorCode.InvalidArgument, `the value must be on or off, got ${JSON.stringify(value)}`, { details: { path: "value" } });
}

export function registerFlagsCommands(program: Command, run: ActionRunner): void {
  const flags = program.command("flags").description("show and switch the live flags (audited; running processes apply a change within ~1 s)");

  /**
   * `flags set NAME on|off [--tenant T | --role R | --team T] --reason TEXT [--actor A] [--json]` — stores the
   * value for that scope (none = the global master switch) and audits it: action `flag`, destination the scope,
   * verdict on/off, rule the flag name — in the tenant's chain for `--tenant`, in `_system` otherwise.
   *
   * Human output: `HARNESS_ENABLED role:writer is now off (by sre: draining writer); audit seq 4 in chain _system`
   * JSON: the stored row `{"name","scopeKind","scope","enabled","updatedBy","reason","updatedAt","audit":{"orgId","seq"}}`
   */
  flags
    .command("set")
    .description("switch a flag on or off for a scope (global without --tenant/--role/--team)")
    .argument("<name>", FLAG_NAMES.join(" | "))
    .argument("<value>", "on | off")
    .option("--tenant <tenant>", "tenant scope (COORDINATOR_ENABLED, A2A_EGRESS_ENABLED, REPLY_ENABLED)")
    .option("--role <role>", "role scope (HARNESS_ENABLED, BUS_ROUTED)")
    .option("--team <team>", "team scope (HARNESS_ENABLED, BUS_ROUTED)")
    .requiredOption("--reason <text>", "why (recorded in the audit log)")
    .option("--actor <actor>", "who (recorded in the audit log)", "cli")
    .option("--json", "print the stored row as JSON")
    .action(
      run(async (ctx, name: string, value: string, options: SetOptions) => {
        const enabled = onOff(value);
        const { scopeKind, scope } = scopeOf(options);
        const row = await withAdminApi(ctx, (api) => api.setFlag({ name, scopeKind, scope, enabled, actor: options.actor, reason: options.reason }));
        const { audit, ...stored } = row;
        if (options.json) return ctx.printJson({ ...stored, audit: { orgId: audit.orgId, seq: audit.seq } });
        const where = describeScope(row.scopeKind, row.scope);
        ctx.print(`${row.name} ${where} is now ${row.enabled ? "on" : "off"} (by ${row.updatedBy}: ${row.reason}); audit seq ${audit.seq} in chain ${audit.orgId}`);
        if (row.scopeKind !== "global" && row.name !== "BUS_ROUTED") ctx.note(`note: a ${row.scopeKind} value counts only while ${row.name} is on globally`);
        if (audit.orgId === SYSTEM_CHAIN) ctx.note(`verify that chain with: switchyard audit verify --tenant ${SYSTEM_CHAIN}`);
      }),
    );

  /**
   * `flags list [--json]` — every flag value in force: each global switch, the scopes this environment's
   * SWITCHYARD_* defaults name (source `env`), and every stored row (source `table`, which wins). `IN FORCE` is
   * the value combined with the flag's global master switch.
   *
   * JSON: `[{"name","scopeKind","scope","enabled","effective","source","updatedBy"?,"reason"?,"updatedAt"?}]`
   */
  flags
    .command("list")
    .description("show every flag value in force (environment defaults and stored values)")
    .option("--json", "print the values as JSON")
    .action(
      run(async (ctx, options: { json?: boolean }) => {
        const views = await withAdminApi(ctx, (api) => api.listFlagValues());
        if (options.json) return ctx.printJson(views);
        ctx.print(
          formatTable(
            ["flag", "scope", "value", "in force", "source", "updated", "by", "reason"],
            views.map((v) => [
              v.name,
              v.scopeKind === "global" ? "global" : `${v.scopeKind}:${v.scope}`,
              v.enabled ? "on" : "off",
              v.effective ? "on" : "off",
              v.source,
              v.updatedAt ? formatTime(v.updatedAt) : null,
              v.updatedBy ?? null,
              v.reason ?? null,
            ]),
          ),
        );
      }),
    );
}
