/**
 * `switchyard apikey create|revoke|list` — API keys for tenants and for SREs (admin keys), through AdminService
 * run in-process against the database (remote/admin-api.ts). A key is shown once, when created; only its sha256
 * hash is stored.
 */
import type { Command } from "commander";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { uuidOption } from "../args.js";
import type { ActionRunner } from "../action.js";
import type { CliContext } from "../context.js";
import { formatTable, formatTime } from "../output.js";
import { withAdminApi, type ApiKeyRecord, type NewApiKey } from "../remote/admin-api.js";

export function apiKeyJson(key: ApiKeyRecord): Record<string, unknown> {
  return {
    id: key.id,
    kind: key.kind,
    orgId: key.orgId,
    name: key.name,
    prefix: key.prefix,
    createdAt: key.createdAt.toISOString(),
    revokedAt: key.revokedAt?.toISOString() ?? null,
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
  };
}

/** The one time a key is visible: a sentence, then the key alone on the last line (for scripts). */
export function printNewKey(ctx: CliContext, created: NewApiKey): void {
  const { key } = created;
  const owner = key.kind === "admin" ? "admin key" : `API key for tenant ${key.orgId}`;
  ctx.print(`${owner} "${key.name}" (id ${key.id}); it is shown only now, store it safely:`);
  ctx.print(created.secret);
}

export function registerApiKeyCommands(program: Command, run: ActionRunner): void {
  const apikey = program.command("apikey").description("create, revoke and list API keys (operator; direct database access)");

  /**
   * `apikey create (--tenant T | --admin) [--name N] [--json]` — prints the key ONCE, alone on the last line.
   * JSON: `{"apiKey":{"id","kind","orgId","name","prefix","createdAt","revokedAt","lastUsedAt"},"key":"sy_…"}`
   */
  apikey
    .command("create")
    .description("create an API key for a tenant, or an admin key (printed once)")
    .option("--tenant <tenant>", "the tenant the key acts for")
    .option("--admin", "an admin (SRE) key: AdminService, and tenant services naming a tenant")
    .option("--name <name>", "what the key is for (shown in listings and recorded as the actor)", "default")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; admin?: boolean; name: string; json?: boolean }) => {
        if ((options.tenant === undefined) === !options.admin) {
          throw new SwitchyardError(ErrorCode.InvalidArgument, "pass exactly one of --tenant T or --admin", { details: { path: "--tenant" } });
        }
        const created = await withAdminApi(ctx, (api) =>
          api.createApiKey(options.admin ? { kind: "admin", name: options.name } : { kind: "tenant", orgId: options.tenant!, name: options.name }),
        );
        if (options.json) return ctx.printJson({ apiKey: apiKeyJson(created.key), key: created.secret });
        printNewKey(ctx, created);
      }),
    );

  /** `apikey revoke ID [--json]` — refused on the next request. JSON: the key as in `apikey list`. */
  apikey
    .command("revoke")
    .description("revoke an API key (takes effect on its next request)")
    .argument("<id>", "key id (see apikey list)", uuidOption)
    .option("--json", "print the key as JSON")
    .action(
      run(async (ctx, id: string, options: { json?: boolean }) => {
        const key = await withAdminApi(ctx, (api) => api.revokeApiKey(id));
        if (options.json) return ctx.printJson(apiKeyJson(key));
        ctx.print(`revoked key ${key.id} (${key.prefix}…, "${key.name}") at ${formatTime(key.revokedAt)}`);
      }),
    );

  /** `apikey list [--tenant T] [--json]` — never the keys themselves. JSON: `{"apiKeys":[…]}` */
  apikey
    .command("list")
    .description("list API keys (never the secrets)")
    .option("--tenant <tenant>", "only this tenant's keys")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; json?: boolean }) => {
        const keys = await withAdminApi(ctx, (api) => api.listApiKeys(options.tenant !== undefined ? { orgId: options.tenant } : {}));
        if (options.json) return ctx.printJson({ apiKeys: keys.map(apiKeyJson) });
        ctx.print(
          formatTable(
            ["id", "kind", "tenant", "name", "prefix", "created", "last used", "revoked"],
            keys.map((k) => [k.id, k.kind, k.orgId, k.name, `${k.prefix}…`, formatTime(k.createdAt), formatTime(k.lastUsedAt), formatTime(k.revokedAt)]),
          ),
        );
      }),
    );
}
