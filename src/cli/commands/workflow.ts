/**
 * `switchyard workflow submit|get|list` — a tenant's versioned workflow definitions.
 */
import type { Command } from "commander";
import { readInputFile } from "../args.js";
import type { ActionRunner } from "../action.js";
import { formatTable, formatTime } from "../output.js";
import { TENANT_OPTION_HELP, withTenantApi } from "../remote/session.js";

interface TenantOptions {
  tenant?: string;
  json?: boolean;
}

export function registerWorkflowCommands(program: Command, run: ActionRunner): void {
  const workflow = program.command("workflow").description("submit, show and list workflow definitions");

  /**
   * `workflow submit FILE --tenant T [--json]`
   *
   * Validates FILE (YAML or JSON) and stores it as the next version of its name; an identical definition returns
   * the existing version. Human output: a sentence, then `name@version` alone on the last line.
   * An invalid file exits 2 with the file path and the field path of each problem in the message.
   *
   * JSON: `{"name":"research-report","version":1,"ref":"research-report@1","digest":"<sha256 hex>","created":true}`
   */
  workflow
    .command("submit")
    .description("validate a workflow file and store it as the next version")
    .argument("<file>", "workflow definition (YAML or JSON)")
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, file: string, options: TenantOptions) => {
        const submitted = await withTenantApi(ctx, options.tenant, async (api) => api.submitWorkflow(await readInputFile(ctx.io.cwd, file)));
        if (options.json) return ctx.printJson(submitted);
        ctx.print(submitted.created ? `stored ${submitted.name} version ${submitted.version}` : `unchanged: identical to version ${submitted.version}`);
        ctx.print(submitted.ref);
      }),
    );

  /**
   * `workflow get REF --tenant T [--json]` — REF is `name` (latest) or `name@version`.
   *
   * Human output: the definition as YAML (snake_case, every default spelled out) under a `# name@version` line.
   *
   * JSON: `{"name":"…","version":1,"ref":"name@1","digest":"…","createdAt":"<ISO 8601>","definition":{…}}` where
   * `definition` is in the file format (`name`, `description?`, `budget?`, `steps[]` with `id`, `to`, `needs`,
   * `timeout?` (ms), `retries`, `backoff` (ms), `cost_estimate`, `clearance`, `approval`).
   */
  workflow
    .command("get")
    .description("show one workflow version (default: the latest)")
    .argument("<ref>", "NAME or NAME@VERSION")
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, ref: string, options: TenantOptions) => {
        const stored = await withTenantApi(ctx, options.tenant, (api) => api.getWorkflow(ref));
        const definition = stored.definition;
        if (options.json) {
          return ctx.printJson({
            name: stored.name,
            version: stored.version,
            ref: stored.ref,
            digest: stored.digest,
            createdAt: new Date(stored.createdAt).toISOString(),
            definition,
          });
        }
        ctx.print(`# ${stored.ref} (stored ${formatTime(stored.createdAt)})`);
        const { stringify } = await import("yaml");
        ctx.io.stdout.write(stringify(definition));
      }),
    );

  /**
   * `workflow list --tenant T [--json]` — one entry per workflow name, describing its latest version.
   *
   * JSON: `{"workflows":[{"name":"…","version":2,"ref":"name@2","versions":2,"description":"…"|null,"createdAt":"<ISO 8601>"}]}`
   */
  workflow
    .command("list")
    .description("list the tenant's workflows (latest version of each)")
    .option("--tenant <tenant>", TENANT_OPTION_HELP)
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: TenantOptions) => {
        const workflows = await withTenantApi(ctx, options.tenant, (api) => api.listWorkflows());
        if (options.json) {
          return ctx.printJson({
            workflows: workflows.map((w) => ({
              name: w.name,
              version: w.version,
              ref: w.ref,
              versions: w.versions,
              description: w.description ?? null,
              createdAt: new Date(w.createdAt).toISOString(),
            })),
          });
        }
        ctx.print(formatTable(["name", "latest", "versions", "created", "description"], workflows.map((w) => [w.name, w.ref, w.versions, formatTime(w.createdAt), w.description ?? ""])));
      }),
    );
}
