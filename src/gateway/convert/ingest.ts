/**
 * Ingest endpoint rows ↔ switchyard.api.v1.IngestEndpoint. The secret is never part of an endpoint: only Create
 * and RotateSecret carry it, beside the endpoint.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { IngestSource, type IngestEndpointSchema } from "../../gen/switchyard/api/v1/ingest_pb.js";
import { ingestUrl, type IngestEndpoint, type IngestSource as StoreSource } from "../../ingest/endpoint-store.js";
import { enumMapping, toTimestamp } from "./values.js";

export const ingestSources = enumMapping<StoreSource, IngestSource>("ingest source", [
  ["github", IngestSource.GITHUB],
  ["gitea", IngestSource.GITEA],
  ["slack", IngestSource.SLACK],
  ["cairn", IngestSource.CAIRN],
  ["generic", IngestSource.GENERIC],
]);


export function ingestEndpointToProto(endpoint: IngestEndpoint, publicUrl: string): MessageInitShape<typeof IngestEndpointSchema> {
  return {
    id: endpoint.id,
    source: ingestSources.toProto(endpoint.source),
    workflow: endpoint.workflow,
    enabled: endpoint.enabled,
    url: ingestUrl(publicUrl, endpoint.id),
    secretFingerprint: endpoint.secretFingerprint ?? "",
    ...(endpoint.previousSecretExpiresAt ? { previousSecretExpiresAt: toTimestamp(endpoint.previousSecretExpiresAt) } : {}),
    createdAt: toTimestamp(endpoint.createdAt),
    updatedAt: toTimestamp(endpoint.updatedAt),
  };
}

export function ingestSourceFromProto(source: IngestSource): StoreSource {
  const mapped = ingestSources.fromProtoOptional(source);
  if (!mapped) throw new SwitchyardError(ErrorCode.InvalidArgument, `source: one of ${ingestSources.values.join(", ")} is required`, { details: { path: "source" } });
  return mapped;
}
