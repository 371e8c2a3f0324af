/**
 * The tenant's ingest endpoints as the CLI reaches them: a client of the gateway's IngestService, run in-process
 * against the database (direct mode: direct-transport.ts; `--tenant` names the tenant, the cipher comes from this
 * process's SWITCHYARD_SECRET_ENCRYPTION_KEY and the URLs from its SWITCHYARD_PUBLIC_URL). It answers with the
 * endpoint store's own records plus the URL the handler gives each, so `ingest` prints what it printed when it
 * read the store itself.
 *
 * Direct mode only for now: the `ingest` commands never followed `--url` / SWITCHYARD_URL, and their help says
 * `--tenant` is the tenant; a remote mode is `clientIngestApi` over `createApiTransport`.
 */
import { createClient, type Transport } from "@connectrpc/connect";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { IngestService, type IngestEndpoint as ProtoEndpoint } from "../../gen/switchyard/api/v1/ingest_pb.js";
import { ingestSources } from "../../gateway/convert/ingest.js";
import type { IngestEndpoint } from "../../ingest/endpoint-store.js";
import type { IngestSource } from "../../ingest/sources.js";
import { requireTenant } from "../args.js";
import type { CliContext } from "../context.js";
import { callerAt } from "./remote-api.js";

/** An endpoint as the API answers it: the store's record and where the provider posts. */
export interface IngestEndpointView extends IngestEndpoint {
  url: string;
}

/** Create and rotate answer the secret once, beside the endpoint; null for generic. */
export interface IngestEndpointWithSecretView {
  endpoint: IngestEndpointView;
  secret: string | null;
}

export interface IngestApi {
  /** The tenant acted for. */
  readonly tenant: string;
  create(input: { source: IngestSource; workflow: string }): Promise<IngestEndpointWithSecretView>;
  list(): Promise<IngestEndpointView[]>;
  rotateSecret(id: string): Promise<IngestEndpointWithSecretView>;
  disable(id: string): Promise<IngestEndpointView>;
}

export async function withIngestApi<T>(ctx: CliContext, tenant: string | undefined, fn: (api: IngestApi) => Promise<T>): Promise<T> {
  const orgId = requireTenant(tenant);
  const direct = (await import("./direct-transport.js")).openDirectTransport(ctx, orgId);
  try {
    return await fn(clientIngestApi(direct.transport, { tenant: orgId, where: "the database (direct mode)" }));
  } finally {
    await direct.close();
  }
}

/** The IngestApi over any transport to IngestService. */
export function clientIngestApi(transport: Transport, options: { tenant: string; where: string }): IngestApi {
  const { tenant, where } = options;
  const client = createClient(IngestService, transport);
  const call = callerAt(where);
  const view = (endpoint: ProtoEndpoint | undefined): IngestEndpointView => {
    if (!endpoint) throw new SwitchyardError(ErrorCode.Internal, `${where} answered without an endpoint`);
    return ingestEndpointFromProto(tenant, endpoint);
  };
  // The wire has no null: an empty secret is generic's none.
  const withSecret = (res: { endpoint?: ProtoEndpoint; secret: string }): IngestEndpointWithSecretView => ({ endpoint: view(res.endpoint), secret: res.secret || null });
  return {
    tenant,
    async create(input) {
      return withSecret(await call(() => client.create({ source: ingestSources.toProto(input.source), workflow: input.workflow })));
    },
    async list() {
      return (await call(() => client.list({}))).endpoints.map((e) => view(e));
    },
    async rotateSecret(id) {
      return withSecret(await call(() => client.rotateSecret({ id })));
    },
    async disable(id) {
      return view((await call(() => client.disable({ id }))).endpoint);
    },
  };
}

/** The store's record an answer describes (the tenant is the caller's; the proto does not repeat it). */
export function ingestEndpointFromProto(orgId: string, endpoint: ProtoEndpoint): IngestEndpointView {
  return {
    id: endpoint.id,
    orgId,
    source: ingestSources.fromProto(endpoint.source),
    workflow: endpoint.workflow,
    enabled: endpoint.enabled,
    url: endpoint.url,
    secretFingerprint: endpoint.secretFingerprint || null,
    previousSecretExpiresAt: endpoint.previousSecretExpiresAt ? timestampDate(endpoint.previousSecretExpiresAt) : null,
    createdAt: dateOf(endpoint.createdAt),
    updatedAt: dateOf(endpoint.updatedAt),
  };
}

function dateOf(value: Timestamp | undefined): Date {
  return value ? timestampDate(value) : new Date(0);
}
