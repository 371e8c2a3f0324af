/**
 * A Connect transport to a Switchyard gateway that authenticates every call with an API key. Used by the CLI's
 * remote mode; works for any client built with `createClient(Service, transport)`.
 */
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { TENANT_HEADER } from "../../gateway/auth.js";

export interface ApiTransportOptions {
  /** The gateway's base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** An API key (`sy_…`). */
  token: string;
  /** With an admin key: the tenant to act for. With a tenant key: asserted (a mismatch is refused). */
  tenant?: string;
  /** The binary protobuf encoding (default) or JSON. */
  useBinaryFormat?: boolean;
}

export function createApiTransport(options: ApiTransportOptions): Transport {
  const auth: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${options.token}`);
    if (options.tenant) req.header.set(TENANT_HEADER, options.tenant);
    return next(req);
  };
  return createConnectTransport({
    baseUrl: options.url,
    httpVersion: "1.1",
    useBinaryFormat: options.useBinaryFormat ?? true,
    interceptors: [auth],
  });
}
