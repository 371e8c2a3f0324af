/**
 * The connection vault as the CLI reaches it: straight against the database (operator path, `--tenant` names the
 * tenant, the cipher comes from this process's SWITCHYARD_SECRET_ENCRYPTION_KEY) or through a gateway's
 * ConnectionService when `--url` / SWITCHYARD_URL is set (the API key decides the tenant; the gateway's key seals).
 * Both return the same records, so the command prints the same either way.
 */
import { createClient } from "@connectrpc/connect";
import { ConnectionService } from "../../gen/switchyard/api/v1/connections_pb.js";
import { connectionFromProto, connectionKinds } from "../../gateway/convert/connections.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { withTransaction } from "../../store/db.js";
import { requireTenantRecord } from "../../tenancy/tenants.js";
import type { ConnectionRecord } from "../../vault/connection-record.js";
import { isConnectionKind } from "../../vault/connection-input.js";
import { addConnection, deleteConnection, listConnections, rotateConnection, type ConnectionInput } from "../../vault/connection-store.js";
import { createSecretCipher } from "../../vault/secret-cipher.js";
import { requireTenant } from "../args.js";
import type { CliContext } from "../context.js";
import { switchyardErrorOf } from "./remote-api.js";
import { createApiTransport } from "./transport.js";

export interface ConnectionApi {
  /** The tenant acted for, when this side knows it (direct mode, or --tenant in remote mode). */
  readonly tenant: string | undefined;
  add(input: ConnectionInput, actor: string): Promise<ConnectionRecord>;
  rotate(id: string, secret: string, actor: string): Promise<ConnectionRecord>;
  delete(id: string, actor: string): Promise<ConnectionRecord>;
  list(): Promise<ConnectionRecord[]>;
}

export async function withConnectionApi<T>(ctx: CliContext, tenant: string | undefined, fn: (api: ConnectionApi) => Promise<T>): Promise<T> {
  const remote = ctx.remote;
  if (remote) return fn(remoteConnectionApi(remote, tenant?.trim() || undefined));
  const orgId = requireTenant(tenant);
  return ctx.withPool(async (pool) => {
    await requireTenantRecord(pool, orgId);
    const cipher = createSecretCipher(ctx.config.origin.encryptionKeys);
    return fn({
      tenant: orgId,
      add: (input, actor) => withTransaction(pool, (client) => addConnection(client, cipher, orgId, input, { actor })),
      rotate: (id, secret, actor) => withTransaction(pool, (client) => rotateConnection(client, cipher, orgId, id, secret, { actor })),
      delete: (id, actor) => withTransaction(pool, (client) => deleteConnection(client, orgId, id, { actor })),
      list: () => listConnections(pool, orgId),
    });
  });
}

function remoteConnectionApi(target: { url: string; token: string }, tenant: string | undefined): ConnectionApi {
  const client = createClient(ConnectionService, createApiTransport({ url: target.url, token: target.token, ...(tenant ? { tenant } : {}) }));
  const call = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw switchyardErrorOf(error, target.url);
    }
  };
  const record = (connection: Parameters<typeof connectionFromProto>[1] | undefined): ConnectionRecord => {
    if (!connection) throw new SwitchyardError(ErrorCode.Internal, `${target.url} answered without a connection`);
    return connectionFromProto(tenant ?? "", connection);
  };
  return {
    tenant,
    async add(input, actor) {
      if (!isConnectionKind(input.kind)) {
        throw new SwitchyardError(ErrorCode.InvalidArgument, `kind: must be one of ${connectionKinds.values.join(", ")}, got ${JSON.stringify(input.kind)}`, { details: { path: "kind" } });
      }
      const res = await call(() =>
        client.add({ kind: connectionKinds.toProto(input.kind as never), accountKey: input.accountKey, apiBaseUrl: input.apiBaseUrl ?? "", targets: [...(input.targets ?? [])], secret: input.secret, actor }),
      );
      return record(res.connection);
    },
    async rotate(id, secret, actor) {
      return record((await call(() => client.rotate({ id, secret, actor }))).connection);
    },
    async delete(id, actor) {
      return record((await call(() => client.delete({ id, actor }))).connection);
    },
    async list() {
      return (await call(() => client.list({}))).connections.map((c) => record(c));
    },
  };
}
