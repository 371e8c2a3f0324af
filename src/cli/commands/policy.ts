/**
 * `switchyard policy set|get` — a tenant's governance policy (versions 1, 2, 3 …; the latest applies).
 */
import type { Command } from "commander";
import { inFile, readInputFile, requireTenant } from "../args.js";
import type { ActionRunner } from "../action.js";

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
        const { putPolicy } = await import("../../governance/policy-store.js");
        const { createPostgresPolicyStore } = await import("../../store/policies/postgres-policy-store.js");
        const { requireTenantRecord } = await import("../../tenancy/tenants.js");
        const tenant = requireTenant(options.tenant);
        const input = await readInputFile(ctx.io.cwd, file);
        const { version } = await ctx.withPool(async (pool) => {
          await requireTenantRecord(pool, tenant);
          try {
            return await putPolicy(createPostgresPolicyStore(), pool, tenant, input.text);
          } catch (error) {
            throw inFile(input.path, error);
          }
        });
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
        const { BUILTIN_DEFAULT_DOCUMENT } = await import("../../governance/default-policy.js");
        const { getPolicy } = await import("../../governance/policy-store.js");
        const { createPostgresPolicyStore } = await import("../../store/policies/postgres-policy-store.js");
        const tenant = requireTenant(options.tenant);
        const stored = await ctx.withPool((pool) => getPolicy(createPostgresPolicyStore(), pool, tenant));
        const document = stored?.compiled.document ?? BUILTIN_DEFAULT_DOCUMENT;
        if (options.json) return ctx.printJson({ tenant, version: stored?.version ?? null, builtin: stored === null, document });
        ctx.print(stored ? `# version ${stored.version}` : "# built-in default (the tenant has stored no policy)");
        ctx.io.stdout.write(stringify(document));
      }),
    );
}
