/**
 * The connection vault as the CLI reaches it: one client of the gateway's ConnectionService over either transport —
 * the gateway's handlers run in-process against the database (direct mode, `--tenant` names the tenant, the cipher
 * comes from this process's SWITCHYARD_SECRET_ENCRYPTION_KEY: direct-transport.ts) or a gateway when `--url` /
 * SWITCHYARD_URL is set (the API key decides the tenant; the gateway's key seals). Both return the same records, so
 * the command prints the same either way.
 */
import { createClient, type Transport } from "@connectrpc/connect";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { ConnectionService } from "../../gen/switchyard/api/v1/connections_pb.js";
import { connectionFromProto, connectionKinds } from "../../gateway/convert/connections.js";
import type { ConnectionRecord } from "../../vault/connection-record.js";
import type { ConnectionInput } from "../../vault/connection-store.js";
import { requireTenant } from "../args.js";
import type { CliContext } from "../context.js";
import { callerAt } from "./remote-api.js";
import { createApiTransport } from "./transport.js";

// The shapes the API answers in, named here so the command speaks the client's vocabulary.
export type { ConnectionInput, ConnectionRecord };

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
  if (remote) {
    const named = tenant?.trim() || undefined;
    // Connect's Node transport keeps no connection that needs closing per command.
    const transport = createApiTransport({ url: remote.url, token: remote.token, ...(named ? { tenant: named } : {}) });
    return fn(clientConnectionApi(transport, { tenant: named, where: remote.url }));
  }
  const orgId = requireTenant(tenant);
  // Loaded here, not at the top: remote mode needs none of the runtime it opens.
  const direct = (await import("./direct-transport.js")).openDirectTransport(ctx, orgId);
  try {
    return await fn(clientConnectionApi(direct.transport, { tenant: orgId, where: "the database (direct mode)" }));
  } finally {
    await direct.close();
  }
}

interface ClientOptions {
  tenant: string | undefined;
  /** Names the other side in errors that are about reaching it (the gateway's URL). */
  where: string;
}

/** The ConnectionApi over any transport to ConnectionService. */
function clientConnectionApi(transport: Transport, options: ClientOptions): ConnectionApi {
  const { tenant, where } = options;
  const client = createClient(ConnectionService, transport);
  const call = callerAt(where);
  const record = (connection: Parameters<typeof connectionFromProto>[1] | undefined): ConnectionRecord => {
    if (!connection) throw new SwitchyardError(ErrorCode.Internal, `${where} answered without a connection`);
    return connectionFromProto(tenant ?? "", connection);
  };
  // `actor`: in direct mode what is recorded, as said (gateway/auth.ts `callActor`); through a gateway the key's
  // identity is recorded with it.
  return {
    tenant,
    async add(input, actor) {
      // The proto has no value for an unknown kind: refuse it here, as the vault would.
      if (!connectionKinds.values.includes(input.kind as never)) {
        throw new SwitchyardError(ErrorCode.InvalidArgument, `kind: must be one of ${connectionKinds.values.join(", ")}, got ${JSON.stringify(input.kind)}`, { details: { path: "kind" } });
      }
      const res = await call(() =>
        client.add(
          { kind: connectionKinds.toProto(input.kind as never), accountKey: input.accountKey, apiBaseUrl: input.apiBaseUrl ?? "", targets: [...(input.targets ?? [])], secret: input.secret, actor },
        ),
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
