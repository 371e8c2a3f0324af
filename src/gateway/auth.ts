/**
 * Authentication and tenancy for every RPC: `Authorization: Bearer <key>` (or a console session cookie, which stands
 * for the key it was signed in with: see console/session-auth.ts) decides who is calling and, for tenant
 * services, which tenant the call runs as. A tenant key's tenant is fixed; the request cannot choose another (a
 * `Switchyard-Tenant` header may only repeat it). An admin key reaches AdminService, and tenant services only when
 * it names the tenant in `Switchyard-Tenant` (an SRE verifying a tenant's chain), and only a tenant that exists.
 *
 * This is the one place a tenant call's tenant is decided: every method of every tenant service gets it from
 * `tenantCall(ctx)`, so a check made here (the tenant exists) holds for all of them, present and future.
 *
 * The one other way in is the CLI's direct mode, which runs these services in-process for an operator with
 * database access (src/cli/remote/direct-transport.ts): `setOperatorCall` stands in for this interceptor there.
 */
import { Code, ConnectError, createContextKey, type ContextValues, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { principalActor, recordedActor } from "../tenancy/principal.js";
import { isDatabaseUnavailable, type Queryable } from "../store/db.js";
import { MicroBatcher } from "../store/micro-batcher.js";
import { resolveApiKeys, type ApiKeyResolution } from "../tenancy/api-keys.js";
import type { ApiKeyStore, TenantStore } from "../store/tenancy/tenancy-store.js";
import type { KeyIdentity, Principal } from "../tenancy/principal.js";
import { ORG_ID_PATTERN } from "../tenancy/tenants.js";
import { authenticateSession, type SessionAuthOptions } from "./console/session-auth.js";

export const TENANT_HEADER = "switchyard-tenant";

/** A tenant service call: the tenant it runs as and the key that vouched for it. */
export interface TenantCall {
  orgId: string;
  principal: Principal;
}

const principalKey = createContextKey<Principal | undefined>(undefined, { description: "switchyard principal" });
const tenantKey = createContextKey<TenantCall | undefined>(undefined, { description: "switchyard tenant call" });
/** How the call authenticated: a bearer key (`api`), a console session cookie (`console`), or none: the CLI's direct mode (`cli`). */
const channelKey = createContextKey<CallChannel>("api", { description: "switchyard call channel" });
/** Set for the CLI's direct mode only: the operator's own name for what it does (`--actor`). */
const operatorKey = createContextKey<{ actor: string } | undefined>(undefined, { description: "switchyard operator call" });

export type CallChannel = "api" | "console" | "cli";

/**
 * Who the CLI's direct mode is, as a principal: an operator with database access. Its authority is the database
 * URL, not a key, so it acts as an admin would — for the tenant it names, recording the actor it says.
 */
const OPERATOR: Principal = { kind: "admin", keyId: "", keyName: "operator", keyPrefix: "" };

/**
 * The header the CLI's direct mode names its `--actor` in for calls without an actor field (TaskService.Reply,
 * AdminService's changes). Read only by `setOperatorCall`'s caller. Percent-encoded (`operatorActorHeader`): a
 * header carries neither line breaks nor text beyond Latin-1, and an `--actor` may.
 */
export const OPERATOR_ACTOR_HEADER = "switchyard-operator-actor";

/** The request headers that name `actor` as the operator's (OPERATOR_ACTOR_HEADER). */
export function operatorActorHeader(actor: string): Record<string, string> {
  return { [OPERATOR_ACTOR_HEADER]: encodeURIComponent(actor) };
}

/** The actor a direct-mode call names in OPERATOR_ACTOR_HEADER, as the operator gave it; undefined when it names none. */
export function operatorActorOf(header: Headers): string | undefined {
  const value = header.get(OPERATOR_ACTOR_HEADER);
  return value === null ? undefined : decodeURIComponent(value);
}

function unauthenticated(message: string): ConnectError {
  return new ConnectError(message, Code.Unauthenticated, { "www-authenticate": 'Bearer realm="switchyard"' });
}

function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

export interface AuthInterceptorOptions {
  /** Where api_keys live: the owner's pool (tenant traffic cannot read the key table). */
  db: Queryable;
  /** The API keys port (`runtime.stores.apiKeys`) a presented key is looked up through. */
  keys: Pick<ApiKeyStore, "findByHashes">;
  /** The tenants port (`runtime.stores.tenants`): the tenant an admin key names must exist. */
  tenants: Pick<TenantStore, "exists">;
  /** Services only admin keys may call. */
  adminServices: readonly DescService[];
  /** Console sessions: a session cookie (with its CSRF token) stands in for the bearer key. Without: bearer only. */
  sessions?: SessionAuthOptions;
}

export function createAuthInterceptor(options: AuthInterceptorOptions): Interceptor {
  const adminOnly = new Set(options.adminServices.map((s) => s.typeName));
  // The keys of calls arriving together are looked up by one statement. Nothing is cached: each call's key is
  // read after the call arrived, so a revocation holds for every call that arrives after it committed.
  const keys = new MicroBatcher<string, ApiKeyResolution>({ run: (secrets) => resolveApiKeys(options.keys, options.db, secrets), maxInFlight: 4, isolate: (error) => !isDatabaseUnavailable(error) });
  // A bearer key, when sent, decides; else a console session cookie; else the call is refused.
  const principalOf = async (header: Headers): Promise<{ principal: Principal; channel: CallChannel }> => {
    const secret = bearerToken(header.get("authorization"));
    if (!secret) {
      const session = options.sessions ? await authenticateSession(header, options.sessions) : undefined;
      if (session) return { principal: session.principal, channel: "console" };
      throw unauthenticated("missing API key: send the header `Authorization: Bearer <key>`");
    }
    const resolved = await keys.submit(secret);
    if (resolved.status === "unknown") throw unauthenticated("unknown API key");
    if (resolved.status === "revoked") throw unauthenticated(`API key ${resolved.prefix}… is revoked`);
    return { principal: resolved.principal, channel: "api" };
  };
  return (next) => async (req) => {
    const { principal, channel } = await principalOf(req.header);
    req.contextValues.set(principalKey, principal);
    req.contextValues.set(channelKey, channel);
    if (adminOnly.has(req.service.typeName)) {
      if (principal.kind !== "admin") throw new ConnectError(`${req.service.name} needs an admin API key; this is a tenant key`, Code.PermissionDenied);
      return next(req);
    }
    req.contextValues.set(tenantKey, await resolveTenantCall(options.tenants, options.db, principal, req.header.get(TENANT_HEADER)));
    return next(req);
  };
}

/**
 * The tenant a tenant-service call acts for. A tenant key's tenant exists (api_keys.org_id references tenants and
 * tenants are never deleted); the tenant an admin key names is looked up, so a typo (`Switchyard-Tenant: ghost`)
 * is refused before anything is written for a tenant no one created.
 */
export async function resolveTenantCall(tenants: Pick<TenantStore, "exists">, db: Queryable, principal: Principal, asserted: string | null): Promise<TenantCall> {
  const orgId = tenantOf(principal, asserted);
  if (principal.kind === "admin") {
    if (!(await tenants.exists(db, orgId))) {
      throw new SwitchyardError(
        ErrorCode.NotFound,
        `no tenant ${orgId} (named in ${TENANT_HEADER}); create it first with AdminService.CreateTenant or \`switchyard tenant create ${orgId}\``,
        { details: { orgId } },
      );
    }
  }
  return { orgId, principal };
}

function tenantOf(principal: Principal, asserted: string | null): string {
  const named = asserted?.trim() || undefined;
  if (principal.kind === "tenant") {
    if (named !== undefined && named !== principal.orgId) {
      throw new ConnectError(`this API key belongs to another tenant than ${named}; a key acts only for its own tenant`, Code.PermissionDenied);
    }
    return principal.orgId;
  }
  if (named === undefined) {
    throw new ConnectError(`an admin key must name the tenant to act for in the \`${TENANT_HEADER}\` header`, Code.InvalidArgument);
  }
  if (!ORG_ID_PATTERN.test(named)) throw new ConnectError(`${TENANT_HEADER}: not a tenant id: ${JSON.stringify(named)}`, Code.InvalidArgument);
  return named;
}

/**
 * Sets what the auth interceptor would for the CLI's direct mode: an operator acting for `orgId` (whose existence
 * the caller has checked as it sees fit), through the `cli` channel, under the name `actor` when the request
 * carries none of its own.
 */
export function setOperatorCall(values: ContextValues, orgId: string, actor: string): void {
  values.set(principalKey, OPERATOR);
  values.set(channelKey, "cli");
  values.set(operatorKey, { actor });
  values.set(tenantKey, { orgId, principal: OPERATOR });
}

/**
 * As `setOperatorCall`, for an AdminService call from the CLI's direct mode: the operator as the admin principal
 * `adminCall` expects, through the `cli` channel, acting for no tenant (as an admin key without `Switchyard-Tenant`).
 */
export function setOperatorAdminCall(values: ContextValues, actor: string): void {
  values.set(principalKey, OPERATOR);
  values.set(channelKey, "cli");
  values.set(operatorKey, { actor });
}

/**
 * The actor recorded for a tenant call's action. Through the API: what the caller says plus the key that vouches
 * for it (`recordedActor`). The CLI's direct mode: what the operator says, as direct mode has always recorded it —
 * database access already lets it write anything, so a key suffix would vouch for nothing.
 */
export function callActor(ctx: HandlerContext, claimed: string): string {
  const operator = ctx.values.get(operatorKey);
  if (operator) return claimed.trim() || operator.actor;
  return recordedActor(tenantCall(ctx).principal, claimed);
}

/**
 * The actor recorded for an AdminService change (a flag, a dispatch limit). Through the API: the admin key
 * (`apikey:NAME`). The CLI's direct mode: the operator's `--actor` as given, as `flags set` and `limits set|clear`
 * have always recorded it (the store refuses an empty one).
 */
export function adminActor(ctx: HandlerContext): string {
  const admin = adminCall(ctx);
  const operator = ctx.values.get(operatorKey);
  return operator ? operator.actor : principalActor(admin);
}

/** The tenant call of a tenant service handler. The interceptor always sets it; its absence is a wiring bug. */
export function tenantCall(ctx: HandlerContext): TenantCall {
  const call = ctx.values.get(tenantKey);
  if (!call) throw new ConnectError("no tenant resolved for this call", Code.Internal);
  return call;
}

/** Whether the call came through a console session or with a bearer key (recorded as how an approval was decided). */
export function callChannel(ctx: HandlerContext): CallChannel {
  return ctx.values.get(channelKey);
}

/** The tenant a call was resolved to, when the auth interceptor resolved one (for the API span). */
export function resolvedTenant(values: ContextValues): string | undefined {
  return values.get(tenantKey)?.orgId;
}

/** The admin principal of an AdminService handler. */
export function adminCall(ctx: HandlerContext): KeyIdentity {
  const principal = ctx.values.get(principalKey);
  if (principal?.kind !== "admin") throw new ConnectError("this call needs an admin API key", Code.PermissionDenied);
  return principal;
}
