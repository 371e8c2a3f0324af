/**
 * `switchyard policy set|get` — a tenant's governance policy (versions 1, 2, 3 …; the latest applies).
 *
 * Through AdminService (remote/admin-api.ts: SetTenantPolicy, GetTenantPolicy), run in-process in direct mode.
 */
import type { Command } from "commander";
import { readInputFile, requireTenant } from "../args.js";
import type { ActionRunner } from "../action.js";
import { withAdminApi } from "../remote/admin-api.js";

interface TenantOptions {
  tenant: string;
  json?: boolean;
}

export function registerPolicyCommands(program: Command, run: ActionRunner): void {
  const policy = program.command("policy").description("store and show the tenant's governance policy");

  /**
   * `policy set FILE --tenant T [--json]` — validates FILE (YAML or JSON) and stores it as the tenant's next
   * version; running coordinators pick it up within about a second. Human output: `version N`.
   * An invalid policy exits 2 with the file path and the field path in the message.
   *
   * JSON: `{"tenant":"T","version":3}`
   */
  policy
    .command("set")
    .description("validate a policy file and store it as the tenant's next version")
    .argument("<file>", "policy document (YAML or JSON)")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, file: string, options: TenantOptions) => {
        const tenant = requireTenant(options.tenant);
        const input = await readInputFile(ctx.io.cwd, file);
        const { version } = await withAdminApi(ctx, (api) => api.setTenantPolicy(tenant, input));
        if (options.json) return ctx.printJson({ tenant, version });
        ctx.print(`version ${version}`);
      }),
    );

  /**
   * `policy get --tenant T [--json]` — the policy that applies now. A tenant that never stored one gets the
   * built-in default (`version` null, `builtin` true).
   *
   * Human output: the normalized document as YAML under a `# version N` (or `# built-in default`) line.
   *
   * JSON: `{"tenant":"T","version":2|null,"builtin":false,"document":{"default":"allow","over_budget":"deny",
   * "clearance":{…},"rules":[{"id":"…","action":["dispatch"]?,"destination":["role:x"]?,"when":"…"?,"verdict":"…","reason":"…"}]}}`
   */
  policy
    .command("get")
    .description("show the policy that applies to the tenant now")
    .requiredOption("--tenant <tenant>", "tenant (org id)")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: TenantOptions) => {
        const { stringify } = await import("yaml");
        const tenant = requireTenant(options.tenant);
        const { version, builtin, document } = await withAdminApi(ctx, (api) => api.getTenantPolicy(tenant));
        if (options.json) return ctx.printJson({ tenant, version, builtin, document });
        ctx.print(builtin ? "# built-in default (the tenant has stored no policy)" : `# version ${version}`);
        ctx.io.stdout.write(stringify(document));
      }),
    );
}
