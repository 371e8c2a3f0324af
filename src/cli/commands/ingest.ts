/**
 * `switchyard ingest create|list|rotate-secret|disable` — the tenant's ingest endpoints (webhook receivers), through
 * the IngestService client (remote/ingest-api.ts): the gateway's handlers run in-process against the database
 * (operator path, `--tenant`). `create` and `rotate-secret` print the verification secret ONCE; nothing else ever
 * prints it (`list` shows its fingerprint). Secrets are sealed with SWITCHYARD_SECRET_ENCRYPTION_KEY: without it
 * only `generic` endpoints can be created.
 */
import { InvalidArgumentError, type Command } from "commander";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { requireTenant } from "../args.js";
import type { ActionRunner } from "../action.js";
import type { CliContext } from "../context.js";
import { formatTable } from "../output.js";
import type { IngestEndpointView } from "../remote/ingest-api.js";
import { INGEST_SOURCES, type IngestSource } from "../remote/ingest-sources.js";

function sourceOption(value: string): IngestSource {
  if (!(INGEST_SOURCES as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${INGEST_SOURCES.join(", ")}`);
  return value as IngestSource;
}

export function ingestEndpointJson(endpoint: IngestEndpointView): Record<string, unknown> {
  return {
    id: endpoint.id,
    orgId: endpoint.orgId,
    source: endpoint.source,
    workflow: endpoint.workflow,
    enabled: endpoint.enabled,
    url: endpoint.url,
    secretFingerprint: endpoint.secretFingerprint,
    previousSecretExpiresAt: endpoint.previousSecretExpiresAt?.toISOString() ?? null,
    createdAt: endpoint.createdAt.toISOString(),
    updatedAt: endpoint.updatedAt.toISOString(),
  };
}

function requireId(id: string | undefined): string {
  if (!id?.trim()) throw new SwitchyardError(ErrorCode.InvalidArgument, "--id must name the endpoint (its URL token, see `ingest list`)", { details: { path: "--id" } });
  return id.trim();
}

function printSecretOnce(ctx: CliContext, secret: string): void {
  ctx.print(`secret: ${secret}`);
  ctx.note("the secret is shown this once: put it in the provider's webhook settings now (`ingest rotate-secret` makes a new one)");
}

export function registerIngestCommands(program: Command, run: ActionRunner): void {
  const ingest = program.command("ingest").description("create, list, rotate and disable the tenant's ingest endpoints (provider webhooks that start tasks)");

  /**
   * `ingest create --tenant T --source github|gitea|slack|cairn|generic --workflow NAME[@V] [--json]` — JSON:
   * `{"endpoint":{…see list…},"url","secret"}` (`secret` null for generic).
   */
  ingest
    .command("create")
    .description("create an ingest endpoint: prints its URL and, once, its verification secret")
    .option("--tenant <tenant>", "tenant id")
    .option("--source <source>", `the provider: ${INGEST_SOURCES.join(", ")} (generic is not verified and never gets a reply address)`, sourceOption)
    .option("--workflow <ref>", "the workflow each delivery starts: NAME (its latest version at delivery) or NAME@VERSION")
    .option("--json", "print the endpoint, URL and secret as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; source?: IngestSource; workflow?: string; json?: boolean }) => {
        const { withIngestApi } = await import("../remote/ingest-api.js");
        const orgId = requireTenant(options.tenant);
        if (!options.source) throw new SwitchyardError(ErrorCode.InvalidArgument, `--source must be one of ${INGEST_SOURCES.join(", ")}`, { details: { path: "--source" } });
        if (!options.workflow) throw new SwitchyardError(ErrorCode.InvalidArgument, "--workflow must name a workflow", { details: { path: "--workflow" } });
        const created = await withIngestApi(ctx, orgId, (api) => api.create({ source: options.source!, workflow: options.workflow! }));
        const url = created.endpoint.url;
        if (options.json) return ctx.printJson({ endpoint: ingestEndpointJson(created.endpoint), url, secret: created.secret });
        ctx.print(`created ${created.endpoint.source} ingest endpoint ${created.endpoint.id} for tenant ${orgId} (workflow ${created.endpoint.workflow})`);
        ctx.print(`url: ${url}`);
        if (created.secret !== null) printSecretOnce(ctx, created.secret);
        else ctx.note("generic endpoints are not verified: the URL is the credential, keep it secret; their tasks get no reply address");
      }),
    );

  /** `ingest list --tenant T [--json]` — JSON: `{"endpoints":[{"id","orgId","source","workflow","enabled","url","secretFingerprint","previousSecretExpiresAt","createdAt","updatedAt"}]}` */
  ingest
    .command("list")
    .description("list the tenant's ingest endpoints (fingerprints, never secrets)")
    .option("--tenant <tenant>", "tenant id")
    .option("--json", "print the result as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; json?: boolean }) => {
        const { withIngestApi } = await import("../remote/ingest-api.js");
        const orgId = requireTenant(options.tenant);
        const endpoints = await withIngestApi(ctx, orgId, (api) => api.list());
        if (options.json) return ctx.printJson({ endpoints: endpoints.map((e) => ingestEndpointJson(e)) });
        if (endpoints.length === 0) return ctx.print(`no ingest endpoints for tenant ${orgId}`);
        ctx.print(
          formatTable(
            ["id", "source", "workflow", "enabled", "fingerprint", "url"],
            endpoints.map((e) => [e.id, e.source, e.workflow, e.enabled ? "yes" : "no", e.secretFingerprint ?? "-", e.url]),
          ),
        );
      }),
    );

  /** `ingest rotate-secret --tenant T --id ID [--json]` — JSON: `{"endpoint":{…},"secret"}`; the old secret verifies for 24 h more. */
  ingest
    .command("rotate-secret")
    .description("make a new verification secret (printed once); the previous one keeps verifying for 24 hours")
    .option("--tenant <tenant>", "tenant id")
    .option("--id <id>", "the endpoint (its URL token)")
    .option("--json", "print the endpoint and the new secret as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; id?: string; json?: boolean }) => {
        const { withIngestApi } = await import("../remote/ingest-api.js");
        const orgId = requireTenant(options.tenant);
        const id = requireId(options.id);
        const rotated = await withIngestApi(ctx, orgId, (api) => api.rotateSecret(id));
        if (options.json) return ctx.printJson({ endpoint: ingestEndpointJson(rotated.endpoint), secret: rotated.secret });
        ctx.print(`rotated the secret of ingest endpoint ${id}; the previous one verifies until ${rotated.endpoint.previousSecretExpiresAt?.toISOString() ?? "-"}`);
        printSecretOnce(ctx, rotated.secret!);
      }),
    );

  /** `ingest disable --tenant T --id ID [--json]` — deliveries answer 404 from now on (within a few seconds on running gateways). */
  ingest
    .command("disable")
    .description("disable an ingest endpoint: its deliveries answer 404 (running gateways notice within seconds)")
    .option("--tenant <tenant>", "tenant id")
    .option("--id <id>", "the endpoint (its URL token)")
    .option("--json", "print the endpoint as JSON")
    .action(
      run(async (ctx, options: { tenant?: string; id?: string; json?: boolean }) => {
        const { withIngestApi } = await import("../remote/ingest-api.js");
        const orgId = requireTenant(options.tenant);
        const id = requireId(options.id);
        const endpoint = await withIngestApi(ctx, orgId, (api) => api.disable(id));
        if (options.json) return ctx.printJson(ingestEndpointJson(endpoint));
        ctx.print(`disabled ingest endpoint ${id} of tenant ${orgId}`);
      }),
    );
}
