/**
 * Connection vault records ↔ switchyard.api.v1.Connection. The proto Connection has no secret field, so nothing
 * converted here can carry one.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ConnectionKind, type Connection, type ConnectionSchema } from "../../gen/switchyard/api/v1/connections_pb.js";
import type { ConnectionKind as DomainKind } from "../../core/reply-address.js";
import type { ConnectionRecord } from "../../vault/connection-record.js";
import { enumMapping, isoFromTimestamp, toTimestamp } from "./values.js";

export const connectionKinds = enumMapping<DomainKind, ConnectionKind>("connection kind", [
  ["github", ConnectionKind.GITHUB],
  ["gitea", ConnectionKind.GITEA],
  ["slack", ConnectionKind.SLACK],
  ["cairn", ConnectionKind.CAIRN],
]);

export function connectionToProto(connection: ConnectionRecord): MessageInitShape<typeof ConnectionSchema> {
  return {
    id: connection.id,
    kind: connectionKinds.toProto(connection.kind),
    accountKey: connection.accountKey,
    apiBaseUrl: connection.apiBaseUrl,
    targets: connection.targets,
    fingerprint: connection.fingerprint,
    ...(connection.botId !== null ? { botId: connection.botId } : {}),
    ...(connection.appId !== null ? { appId: connection.appId } : {}),
    createdBy: connection.createdBy,
    createdAt: toTimestamp(connection.createdAt),
    updatedAt: toTimestamp(connection.updatedAt),
    ...(connection.rotatedAt !== null ? { rotatedAt: toTimestamp(connection.rotatedAt) } : {}),
  };
}

/** For the CLI's remote mode: the record direct mode would have printed (the tenant is the caller's). */
export function connectionFromProto(orgId: string, connection: Connection): ConnectionRecord {
  return {
    id: connection.id,
    orgId,
    kind: connectionKinds.fromProto(connection.kind),
    accountKey: connection.accountKey,
    apiBaseUrl: connection.apiBaseUrl,
    targets: [...connection.targets],
    fingerprint: connection.fingerprint,
    botId: connection.botId ?? null,
    appId: connection.appId ?? null,
    createdBy: connection.createdBy,
    createdAt: isoFromTimestamp(connection.createdAt) ?? "",
    updatedAt: isoFromTimestamp(connection.updatedAt) ?? "",
    rotatedAt: isoFromTimestamp(connection.rotatedAt),
  };
}
