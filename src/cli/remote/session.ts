/**
 * Runs a command's work against the tenant API of this invocation: the gateway when `--url` / SWITCHYARD_URL is
 * set, otherwise the gateway's handlers in-process against the database (direct-transport.ts). In direct mode
 * `--tenant` is required; in remote mode the API key decides the tenant, and `--tenant`, if given, is sent along
 * to be checked (an admin key needs it to pick the tenant).
 */
import { requireTenant } from "../args.js";
import type { CliContext } from "../context.js";
import type { TenantApi } from "./tenant-api.js";

export const TENANT_OPTION_HELP = "tenant (org id); with --url the API key decides it";

export async function withTenantApi<T>(ctx: CliContext, tenant: string | undefined, fn: (api: TenantApi) => Promise<T>): Promise<T> {
  const remote = ctx.remote;
  // Loaded here, not at the top: every command's registration imports this file, and only one mode runs.
  const { createClientTenantApi, createRemoteTenantApi } = await import("./remote-api.js");
  let api: TenantApi;
  if (remote) api = createRemoteTenantApi(remote, tenant?.trim() || undefined);
  else {
    const direct = (await import("./direct-transport.js")).openDirectTransport(ctx, requireTenant(tenant));
    api = createClientTenantApi(direct.transport, { mode: "direct", where: "the database (direct mode)", close: direct.close });
  }
  try {
    return await fn(api);
  } finally {
    await api.close();
  }
}
