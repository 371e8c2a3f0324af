/**
 * Connect clients for the console, generated from the same protos as the gateway (src/gen): same origin, the
 * session cookie, and the CSRF token on every call. An admin session names the tenant it looks at in
 * `Switchyard-Tenant`, as the CLI does with an admin key.
 */
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { ErrorDetailSchema } from "../../src/gen/switchyard/api/v1/errors_pb.js";
import { createServiceClients, type SwitchyardServiceClients } from "../../src/sdk/service-clients.js";

export type ApiClients = SwitchyardServiceClients;

export interface ApiOptions {
  csrfToken: string;
  /** For admin sessions: the tenant whose objects tenant services show. */
  tenant?: () => string | undefined;
  /** Called when the session has ended (expired, revoked): the app returns to sign-in. */
  onSignedOut: () => void;
}

export function createApi(options: ApiOptions): ApiClients {
  const headers: Interceptor = (next) => async (req) => {
    req.header.set("x-csrf-token", options.csrfToken);
    const tenant = options.tenant?.();
    if (tenant) req.header.set("switchyard-tenant", tenant);
    try {
      return await next(req);
    } catch (error) {
      if (ConnectError.from(error).code === Code.Unauthenticated) options.onSignedOut();
      throw error;
    }
  };
  const transport = createConnectTransport({
    baseUrl: window.location.origin,
    interceptors: [headers],
    fetch: (input, init) => globalThis.fetch(input, { ...init, credentials: "same-origin" }),
  });
  return createServiceClients(transport);
}

export interface Problem {
  message: string;
  /** Switchyard's own code (INVALID_WORKFLOW, …) when the error carries one. */
  code?: string;
  violations: { path: string; reason: string }[];
}

/** What to show a person for a failed call: the message, and every validation problem with its field path. */
export function problemOf(error: unknown): Problem {
  const e = ConnectError.from(error);
  const [detail] = e.findDetails(ErrorDetailSchema);
  return {
    message: e.rawMessage,
    ...(detail?.code ? { code: detail.code } : {}),
    violations: detail?.violations.map((v) => ({ path: v.path, reason: v.reason })) ?? [],
  };
}

export function isAbort(error: unknown): boolean {
  return ConnectError.from(error).code === Code.Canceled;
}
