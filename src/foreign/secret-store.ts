/**
 * The secret-store port: a foreign agent's `credential_ref` is a NAME; the secret behind it is resolved here, at
 * send time, and never stored in a workflow, a registry row, a log line or an API response.
 *
 * The default adapter reads the environment (through src/config/index.ts, the only place env is read). Secrets are
 * per tenant: tenant T's reference `env:NAME` resolves to `SWITCHYARD_SECRET_<escaped T>__<NAME>`, see
 * {@link secretEnvName}. Other schemes (a vault, an encrypted table) are further adapters of the same port.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";

export interface SecretStore {
  /** The secret named by `ref` for `orgId`; throws FAILED_PRECONDITION when it cannot be resolved. */
  resolve(orgId: string, ref: string): string;
}

export const SECRET_ENV_PREFIX = "SWITCHYARD_SECRET_";
/** What an `env:` reference may name: a portable environment variable name part. */
export const ENV_SECRET_NAME_PATTERN = /^[A-Za-z0-9_]{1,128}$/;

export function createEnvSecretStore(secrets: Readonly<Record<string, string>>): SecretStore {
  return {
    resolve(orgId, ref) {
      const match = /^env:(.*)$/.exec(ref);
      const name = match && ENV_SECRET_NAME_PATTERN.test(match[1]!) ? secretEnvName(orgId, match[1]!) : undefined;
      const value = name ? secrets[name] : undefined;
      if (value === undefined || value === "") {
        // The message names the reference and the variable, never a value.
        throw new SwitchyardError(ErrorCode.FailedPrecondition, unresolvedMessage(orgId, ref, name, match?.[1]), {
          details: { reason: "CREDENTIAL_UNRESOLVED", credentialRef: ref, ...(name ? { variable: SECRET_ENV_PREFIX + name } : {}) },
        });
      }
      return value;
    },
  };
}

function unresolvedMessage(orgId: string, ref: string, name: string | undefined, rawName: string | undefined): string {
  if (name !== undefined) return `credential ${ref} of tenant ${orgId} is not configured: set ${SECRET_ENV_PREFIX}${name}`;
  return rawName === undefined
    ? `credential ${ref} of tenant ${orgId} names no secret store this deployment has (use env:NAME)`
    : `credential ${ref} of tenant ${orgId}: NAME must be 1 to 128 letters, digits or _`;
}

/**
 * The key (after SWITCHYARD_SECRET_) of tenant `orgId`'s secret NAME: the escaped tenant id, two underscores, NAME
 * exactly as written (environment variables are case-sensitive).
 *
 * The tenant id (lower-case letters, digits, `-`, `_`; see ORG_ID_PATTERN) is escaped so that the mapping is
 * injective: letters are upper-cased, digits kept, `-` becomes `_D` and `_` becomes `_U`. Every `_` of an escaped
 * id is followed by `D` or `U`, so it never contains `__` and never ends in `_`: the first `__` of a key always
 * ends the tenant part, and no NAME can reach into another tenant's variables. Tenant `acme-corp`, `env:TOKEN` →
 * `ACME_DCORP__TOKEN`; tenant `acme_corp` → `ACME_UCORP__TOKEN`; tenant `acme` → `ACME__TOKEN`.
 */
export function secretEnvName(orgId: string, name: string): string {
  return `${escapeTenantForEnv(orgId)}__${name}`;
}

export function escapeTenantForEnv(orgId: string): string {
  if (!/^[a-z0-9][a-z0-9_-]*$/.test(orgId)) {
    throw new SwitchyardError(ErrorCode.InvalidArgument, `not a tenant id: ${JSON.stringify(orgId)}`, { details: { reason: "INVALID_TENANT" } });
  }
  return orgId.replace(/[a-z]/g, (c) => c.toUpperCase()).replace(/[-_]/g, (c) => (c === "-" ? "_D" : "_U"));
}

/** A fetch that adds the agent's credential as a Bearer token to every request it makes. */
export function withCredential(fetchImpl: typeof globalThis.fetch, secret: string): typeof globalThis.fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set("authorization", `Bearer ${secret}`);
    return fetchImpl(input, { ...init, headers });
  };
}
