/**
 * Tenants, API keys and dead letters ↔ switchyard.api.v1 admin messages.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ApiKeyKind, type ApiKeySchema, type DeadLetterSchema, type TenantSchema } from "../../gen/switchyard/api/v1/admin_pb.js";
import type { ApiKeyRecord } from "../../tenancy/api-keys.js";
import type { TenantRecord } from "../../tenancy/tenants.js";
import type { DeadLetterView } from "../../bus/dead-letters.js";
import { enumMapping, toTimestamp } from "./values.js";

export const apiKeyKinds = enumMapping<ApiKeyRecord["kind"], ApiKeyKind>("API key kind", [
  ["tenant", ApiKeyKind.TENANT],
  ["admin", ApiKeyKind.ADMIN],
]);

export function tenantToProto(tenant: TenantRecord): MessageInitShape<typeof TenantSchema> {
  return {
    orgId: tenant.orgId,
    name: tenant.name,
    ...(tenant.dailyBudget !== null ? { dailyBudget: tenant.dailyBudget } : {}),
    createdAt: toTimestamp(tenant.createdAt),
  };
}

export function apiKeyToProto(key: ApiKeyRecord): MessageInitShape<typeof ApiKeySchema> {
  return {
    id: key.id,
    kind: apiKeyKinds.toProto(key.kind),
    orgId: key.orgId ?? "",
    name: key.name,
    prefix: key.prefix,
    createdAt: toTimestamp(key.createdAt),
    revokedAt: toTimestamp(key.revokedAt),
    lastUsedAt: toTimestamp(key.lastUsedAt),
  };
}

export function deadLetterToProto(letter: DeadLetterView): MessageInitShape<typeof DeadLetterSchema> {
  return {
    stream: letter.stream,
    id: letter.id,
    originalId: letter.originalId,
    reason: letter.reason,
    deliveries: letter.deliveries,
    atMs: BigInt(letter.atMs),
    bytes: letter.bytes,
    ...(letter.envelope ? { envelope: letter.envelope } : {}),
  };
}
