/**
 * `switchyard connection add|rotate|delete|list` — the tenant's connection vault (outbound credentials the reply
 * verb posts with), through the ConnectionService client (remote/connection-api.ts): the gateway's handlers run
 * in-process against the database with `--tenant`, or a gateway with `--url` (a tenant API key manages its own
 * tenant's connections).
 *
 * The secret is read from stdin only (`--secret-stdin`) and never printed: output shows its fingerprint.
 */
import { Option, type Command } from "commander";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import type { ActionRunner } from "../action.js";
import type { CliContext } from "../context.js";
import type { ConnectionRecord } from "../remote/connection-api.js";
import { formatTable } from "../output.js";
import { readSecretFromStdin, refuseSecretFlag } from "../secret-input.js";

const TENANT_HELP = "tenant id (with --url the API key decides it)";

export function connectionJson(connection: ConnectionRecord): Record<string, unknown> {
  return {
    id: connection.id,
    ...(connection.orgId ? { orgId: connection.orgId } : {}),
    kind: connection.kind,
    accountKey: connection.accountKey,
    apiBaseUrl: connection.apiBaseUrl,
    targets: connection.targets,
    fingerprint: connection.fingerprint,
    botId: connection.botId,
    appId: connection.appId,
    createdBy: connection.createdBy,
    createdAt: connection.createdAt,
    updatedAt: connection.updatedAt,
    rotatedAt: connection.rotatedAt,
  };
}

function forTenant(tenant: string | undefined): string {
  return tenant ? `tenant ${tenant}` : "the key's tenant";
}

/** A hidden `--secret` that exists only to be refused without echoing its value (commander would quote it). */
function secretTrap(): Option {
  return new Option("--secret <value>").hideHelp();
}

async function stdinSecret(ctx: CliContext, options: { secretStdin?: boolean; secret?: string }): Promise<string> {
  if (options.secret !== undefined) refuseSecretFlag();
  if (!options.secretStdin) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, "--secret-stdin is required: the secret is read from stdin, never from a flag", { details: { path: "--secret-stdin" } });
  }
  const stdin = ctx.io.stdin ?? process.stdin;
  // Typed at a terminal, the read would seem to hang: say what it waits for (and that a pipe is better).
  if (stdin === process.stdin && process.stdin.isTTY) ctx.note("reading the secret from stdin; end it with Ctrl-D (better: pipe it in)");
  return readSecretFromStdin(stdin);
}

function list(value: string): string[] {
  return value.split(",").map((v) => v.trim()).filter(Boolean);
}

interface AddOptions {
  tenant?: string;
  kind: string;
  account: string;
  apiUrl?: string;
  targets?: string[];
  secretStdin?: boolean;
  secret?: string;
  actor?: string;
  json?: boolean;
}

export function registerConnectionCommands(program: Command, run: ActionRunner): void {
  const connection = program.command("connection").description("the tenant's connection vault: outbound credentials replies are posted with");

  /**
   * `connection add --tenant T --kind github|gitea|slack|cairn --account KEY [--api-url URL] [--targets 'a,b']
   * --secret-stdin [--actor A] [--json]` — JSON: the connection (see `connection list --json`).
   */
  connection
    .command("add")
    .description("add a connection; the secret is read from stdin and stored encrypted")
    .option("--tenant <tenant>", TENANT_HELP)
    .requiredOption("--kind <kind>", "github, gitea, slack or cairn")
    .requiredOption("--account <key>", "forge host (github.com, git.example:3000), Slack team id (T…) or Cairn base URL")
    .option("--api-url <url>", "API base URL (default: https://api.github.com, https://HOST/api/v3 for GitHub Enterprise, https://HOST/api/v1 for Gitea, https://slack.com/api, the Cairn base URL)")
    .option("--targets <list>", "comma-separated allowlist: repository globs (acme/*), Slack channel ids, Cairn artifact id globs (default: every target)", list)
    .option("--secret-stdin", "read the secret from stdin (one trailing newline is dropped)")
    .addOption(secretTrap())
    .option("--actor <actor>", "who (recorded in the audit log)")
    .option("--json", "print the connection as JSON")
    .action(
      run(async (ctx, options: AddOptions) => {
        const { withConnectionApi } = await import("../remote/connection-api.js");
        const secret = await stdinSecret(ctx, options);
        await withConnectionApi(ctx, options.tenant, async (api) => {
          const added = await api.add(
            { kind: options.kind, accountKey: options.account, ...(options.apiUrl !== undefined ? { apiBaseUrl: options.apiUrl } : {}), targets: options.targets ?? [], secret },
            actorOf(ctx, options.actor),
          );
          if (options.json) return ctx.printJson(connectionJson(added));
          ctx.print(
            `added ${added.kind} connection ${added.id} for ${forTenant(api.tenant)}: account ${added.accountKey}, api ${added.apiBaseUrl}, targets ${added.targets.join(",") || "*"} (secret ${added.fingerprint})`,
          );
        });
      }),
    );

  /** `connection rotate --tenant T --id ID --secret-stdin [--actor A] [--json]` — a new secret for the connection. */
  connection
    .command("rotate")
    .description("replace a connection's secret (read from stdin)")
    .option("--tenant <tenant>", TENANT_HELP)
    .requiredOption("--id <id>", "the connection id (connection list)")
    .option("--secret-stdin", "read the new secret from stdin (one trailing newline is dropped)")
    .addOption(secretTrap())
    .option("--actor <actor>", "who (recorded in the audit log)")
    .option("--json", "print the connection as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; id: string; secretStdin?: boolean; secret?: string; actor?: string; json?: boolean }) => {
        const { withConnectionApi } = await import("../remote/connection-api.js");
        const secret = await stdinSecret(ctx, options);
        await withConnectionApi(ctx, options.tenant, async (api) => {
          const rotated = await api.rotate(options.id, secret, actorOf(ctx, options.actor));
          if (options.json) return ctx.printJson(connectionJson(rotated));
          ctx.print(`rotated the secret of ${rotated.kind} connection ${rotated.id} (${rotated.accountKey}) for ${forTenant(api.tenant)}: now ${rotated.fingerprint}`);
        });
      }),
    );

  /** `connection delete --tenant T --id ID [--actor A] [--json]` — JSON: the deleted connection. */
  connection
    .command("delete")
    .description("delete a connection: replies that need it are refused with no_connection from now on")
    .option("--tenant <tenant>", TENANT_HELP)
    .requiredOption("--id <id>", "the connection id (connection list)")
    .option("--actor <actor>", "who (recorded in the audit log)")
    .option("--json", "print the deleted connection as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; id: string; actor?: string; json?: boolean }) => {
        const { withConnectionApi } = await import("../remote/connection-api.js");
        await withConnectionApi(ctx, options.tenant, async (api) => {
          const deleted = await api.delete(options.id, actorOf(ctx, options.actor));
          if (options.json) return ctx.printJson(connectionJson(deleted));
          ctx.print(`deleted ${deleted.kind} connection ${deleted.id} (${deleted.accountKey}) for ${forTenant(api.tenant)}`);
        });
      }),
    );

  /**
   * `connection list --tenant T [--json]` — JSON: `{"connections":[{"id","orgId","kind","accountKey","apiBaseUrl",
   * "targets","fingerprint","botId","appId","createdBy","createdAt","updatedAt","rotatedAt"}]}` (never a secret).
   */
  connection
    .command("list")
    .description("list the tenant's connections (fingerprints, never secrets)")
    .option("--tenant <tenant>", TENANT_HELP)
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; json?: boolean }) => {
        const { withConnectionApi } = await import("../remote/connection-api.js");
        await withConnectionApi(ctx, options.tenant, async (api) => {
          const connections = await api.list();
          if (options.json) return ctx.printJson({ connections: connections.map(connectionJson) });
          if (connections.length === 0) return ctx.print(`no connections for ${forTenant(api.tenant)}`);
          ctx.print(
            formatTable(
              ["id", "kind", "account", "api", "targets", "secret", "rotated"],
              connections.map((c) => [c.id, c.kind, c.accountKey, c.apiBaseUrl, c.targets.join(",") || "*", c.fingerprint, c.rotatedAt ?? "-"]),
            ),
          );
        });
      }),
    );
}

/** Direct mode records `cli` unless told otherwise; through a gateway the key's name is recorded anyway. */
function actorOf(ctx: CliContext, actor: string | undefined): string {
  const said = actor?.trim();
  if (said) return said;
  return ctx.remote ? "" : "cli";
}
