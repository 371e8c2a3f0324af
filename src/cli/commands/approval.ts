/**
 * `switchyard approval list|approve|deny|link|keys|rotate-key|retire-key` — the human decisions that parked steps
 * wait for, and the signed one-click links (with their per-tenant keys) that carry them by mail or chat.
 */
import { InvalidArgumentError, type Command } from "commander";
import { requireTenant, secondsOption, uuidOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import type { CliContext } from "../context.js";
import { formatTable, formatTime } from "../output.js";
import { TENANT_OPTION_HELP, withTenantApi } from "../remote/session.js";
import type { ApprovalRow } from "../remote/tenant-api.js";

const STATUSES = ["pending", "approved", "denied", "all"] as const;
type StatusFilter = (typeof STATUSES)[number];

function statusOption(value: string): StatusFilter {
  if (!(STATUSES as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${STATUSES.join(", ")}`);
  return value as StatusFilter;
}

interface DecideOptions {
  tenant?: string;
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
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--status <status>", `one of ${STATUSES.join(", ")}`, statusOption, "pending")
    .option("--task <id>", "only this task's approvals", uuidOption)
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; status: StatusFilter; task?: string; json?: boolean }) => {
        const rows = await withTenantApi(ctx, options.tenant, (api) =>
          api.listApprovals({
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
      .argument("<id>", "approval id", uuidOption)
      .option("--tenant <tenant>", TENANT_OPTION_HELP)
      .option("--actor <actor>", "who decides (recorded in the audit log)", "cli")
      .option("--reason <reason>", "why (recorded in the audit log)")
      .option("--json", "print the result as JSON")
      .action(
        run(async (ctx, id: string, options: DecideOptions) => {
          // Direct mode records the decision as arriving via "cli", remote mode via "api".
          const outcome = await withTenantApi(ctx, options.tenant, (api) =>
            api.decideApproval({
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

  registerLinkCommands(approval, run);
}

function registerLinkCommands(approval: Command, run: ActionRunner): void {
  /**
   * `approval link ID --tenant T [--base-url URL] [--ttl SECONDS] [--json]` — signed one-click approve and deny
   * links for a pending approval, valid until min(approval deadline, now + TTL (default 24 h)), each usable once.
   *
   * JSON: `{"approvalId":"<uuid>","approveUrl":"…","denyUrl":"…","expiresAt":"<ISO 8601>","kid":"…"}`
   */
  approval
    .command("link")
    .description("print signed one-click approve and deny links for a pending approval")
    .argument("<id>", "approval id", uuidOption)
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--base-url <url>", "the gateway's public URL (default: SWITCHYARD_PUBLIC_URL, itself http://127.0.0.1:8080 when unset)")
    .option("--ttl <seconds>", "how long the links work at most (default 24 h; never past the approval's deadline)", secondsOption)
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, id: string, options: { tenant: string; baseUrl?: string; ttl?: number; json?: boolean }) => {
        // Without --base-url the gateway's public URL (SWITCHYARD_PUBLIC_URL; in direct mode this process's).
        const links = await withTenantApi(ctx, requireTenant(options.tenant), (api) =>
          api.createApprovalLinks({
            approvalId: id,
            ...(options.baseUrl !== undefined ? { baseUrl: options.baseUrl } : {}),
            ...(options.ttl !== undefined ? { ttlMs: Math.round(options.ttl * 1000) } : {}),
          }),
        );
        if (options.json) return ctx.printJson({ approvalId: id, ...links });
        ctx.print(`approve: ${links.approveUrl}`);
        ctx.print(`deny:    ${links.denyUrl}`);
        ctx.print(`expires: ${links.expiresAt} (key ${links.kid})`);
      }),
    );

  /**
   * `approval keys --tenant T [--json]` — the tenant's link keys, newest first (never the secrets).
   *
   * JSON: `{"keys":[{"kid":"…","createdAt":"<ISO 8601>","retiredAt":"<ISO 8601>"|null,"signing":true}]}`
   */
  approval
    .command("keys")
    .description("list the tenant's link-signing keys")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant: string; json?: boolean }) => {
        const keys = await withTenantApi(ctx, requireTenant(options.tenant), (api) => api.listLinkKeys());
        if (options.json) return ctx.printJson({ keys });
        ctx.print(
          formatTable(
            ["kid", "created", "retired", "signing"],
            keys.map((k) => [k.kid, formatTime(k.createdAt), formatTime(k.retiredAt), k.signing ? "yes" : ""]),
          ),
        );
      }),
    );

  /**
   * `approval rotate-key --tenant T [--json]` — a new key signs links from now on; links signed with older keys
   * keep working until those keys are retired.
   *
   * JSON: `{"kid":"…"}`
   */
  approval
    .command("rotate-key")
    .description("start signing approval links with a new key (older links keep working until their key is retired)")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant: string; json?: boolean }) => {
        const tenant = requireTenant(options.tenant);
        const kid = await withTenantApi(ctx, tenant, (api) => api.rotateLinkKey());
        if (options.json) return ctx.printJson({ kid });
        ctx.print(`new link key ${kid} signs from now on; retire old keys with \`switchyard approval retire-key KID --tenant ${tenant}\``);
      }),
    );

  /**
   * `approval retire-key KID --tenant T [--json]` — links signed with the key stop working at once.
   * An unknown kid exits 1 with NOT_FOUND.
   *
   * JSON: `{"kid":"…","retiredAt":"<ISO 8601>"}`
   */
  approval
    .command("retire-key")
    .description("retire a link key: links it signed stop working")
    .argument("<kid>", "key id (see `approval keys`)")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, kid: string, options: { tenant: string; json?: boolean }) => {
        const retired = await withTenantApi(ctx, requireTenant(options.tenant), (api) => api.retireLinkKey(kid));
        if (options.json) return ctx.printJson(retired);
        ctx.print(`retired link key ${retired.kid} at ${retired.retiredAt}`);
      }),
    );
}

export function printApprovals(ctx: CliContext, rows: readonly ApprovalRow[]): void {
  ctx.print(
    formatTable(
      ["id", "task", "step", "destination", "rule", "status", "decided by", "via", "created", "expires"],
      rows.map((a) => [
        a.id,
        a.taskId,
        a.stepId,
        a.destination,
        a.rule,
        a.status,
        a.decidedBy,
        a.decidedVia,
        formatTime(a.createdAt),
        formatTime(a.expiresAt),
      ]),
    ),
  );
}
