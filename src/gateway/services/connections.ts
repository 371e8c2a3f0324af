/**
 * ConnectionService: the calling tenant's connection vault. A tenant key manages its own tenant's connections; an
 * admin key names the tenant (see `resolveTenantCall`). Every call runs under row-level security.
 *
 * The secret arrives in Add and Rotate requests and goes straight into the vault, which seals it; responses carry
 * the fingerprint only, and the log lines here name the connection and its fingerprint, never the secret.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { ConnectionKind, ConnectionService } from "../../gen/switchyard/api/v1/connections_pb.js";
import { withTenantTransaction } from "../../store/tenant-scope.js";
import { addConnection, deleteConnection, listConnections, rotateConnection } from "../../vault/connection-store.js";
import type { ConnectionRecord } from "../../vault/connection-record.js";
import { callActor, tenantCall } from "../auth.js";
import { connectionKinds, connectionToProto } from "../convert/connections.js";
import type { ServiceDeps } from "./deps.js";

export function connectionService(deps: ServiceDeps): ServiceImpl<typeof ConnectionService> {
  const scoped = <T>(orgId: string, fn: Parameters<typeof withTenantTransaction<T>>[2]) => withTenantTransaction(deps.pool, orgId, fn);
  const logged = (event: string, connection: ConnectionRecord, actor: string): void =>
    deps.logger.info(
      { orgId: connection.orgId, connectionId: connection.id, kind: connection.kind, accountKey: connection.accountKey, fingerprint: connection.fingerprint, actor },
      event,
    );
  return {
    async add(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const actor = callActor(ctx, req.actor);
      if (req.kind === ConnectionKind.UNSPECIFIED || connectionKinds.fromProtoOptional(req.kind) === undefined) {
        throw new SwitchyardError(ErrorCode.InvalidArgument, "kind: must be GITHUB, GITEA, SLACK or CAIRN", { details: { path: "kind" } });
      }
      const kind = connectionKinds.fromProto(req.kind);
      const connection = await scoped(orgId, (client) =>
        addConnection(deps.stores, client, deps.cipher, orgId, { kind, accountKey: req.accountKey, apiBaseUrl: req.apiBaseUrl, targets: req.targets, secret: req.secret }, { actor }),
      );
      logged("connection added", connection, actor);
      return { connection: connectionToProto(connection) };
    },
    async rotate(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const actor = callActor(ctx, req.actor);
      const connection = await scoped(orgId, (client) => rotateConnection(deps.stores, client, deps.cipher, orgId, req.id, req.secret, { actor }));
      logged("connection secret rotated", connection, actor);
      return { connection: connectionToProto(connection) };
    },
    async delete(req, ctx) {
      const { orgId } = tenantCall(ctx);
      const actor = callActor(ctx, req.actor);
      const connection = await scoped(orgId, (client) => deleteConnection(deps.stores, client, orgId, req.id, { actor }));
      logged("connection deleted", connection, actor);
      return { connection: connectionToProto(connection) };
    },
    async list(_req, ctx) {
      const { orgId } = tenantCall(ctx);
      const connections = await scoped(orgId, (client) => listConnections(deps.stores.connections, client, orgId));
      return { connections: connections.map(connectionToProto) };
    },
  };
}
