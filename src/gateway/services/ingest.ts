/**
 * IngestService: the calling tenant's ingest endpoints. Create and RotateSecret return the secret once; nothing
 * else ever does, and nothing here logs it.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { IngestService } from "../../gen/switchyard/api/v1/ingest_pb.js";
import { createIngestEndpoint, disableIngestEndpoint, listIngestEndpoints, rotateIngestSecret } from "../../ingest/endpoint-store.js";
import { withTenantTransaction } from "../../store/tenant-scope.js";
import { tenantCall } from "../auth.js";
import { ingestEndpointToProto, ingestSourceFromProto } from "../convert/ingest.js";
import type { ServiceDeps } from "./deps.js";

export function ingestService(deps: ServiceDeps): ServiceImpl<typeof IngestService> {
  const scoped = <T>(orgId: string, fn: Parameters<typeof withTenantTransaction<T>>[2]) => withTenantTransaction(deps.pool, orgId, fn);
  return {
    async create(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const source = ingestSourceFromProto(req.source);
      const created = await scoped(orgId, (client) => createIngestEndpoint(deps.stores.ingestEndpoints, client, deps.cipher, orgId, { source, workflow: req.workflow }));
      deps.logger.info({ orgId, endpointId: created.endpoint.id, source }, "ingest endpoint created");
      return { endpoint: ingestEndpointToProto(created.endpoint, deps.publicUrl), secret: created.secret ?? "" };
    },
    async list(_req, ctx) {
      const { orgId } = tenantCall(ctx);
      const endpoints = await scoped(orgId, (client) => listIngestEndpoints(deps.stores.ingestEndpoints, client, orgId));
      return { endpoints: endpoints.map((e) => ingestEndpointToProto(e, deps.publicUrl)) };
    },
    async rotateSecret(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const rotated = await scoped(orgId, (client) => rotateIngestSecret(deps.stores.ingestEndpoints, client, deps.cipher, orgId, req.id));
      deps.ingestEndpoints?.invalidate(req.id);
      deps.logger.info({ orgId, endpointId: req.id }, "ingest endpoint secret rotated");
      return { endpoint: ingestEndpointToProto(rotated.endpoint, deps.publicUrl), secret: rotated.secret ?? "" };
    },
    async disable(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const endpoint = await scoped(orgId, (client) => disableIngestEndpoint(deps.stores.ingestEndpoints, client, orgId, req.id));
      deps.ingestEndpoints?.invalidate(req.id);
      deps.logger.info({ orgId, endpointId: req.id }, "ingest endpoint disabled");
      return { endpoint: ingestEndpointToProto(endpoint, deps.publicUrl) };
    },
  };
}
