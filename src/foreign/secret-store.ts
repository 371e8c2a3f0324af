/**
 * The secret-store port: a foreign agent's `credential_ref` is a NAME; the secret behind it is resolved here, at
 * send time, and never stored in a workflow, a registry row, a log line or an API response.
 *
 * The default adapter reads the environment (through src/config.ts, the only place env is read). Secrets are
 * per tenant: tenant `acme-corp`'s reference `env:WEATHER_TOKEN` resolves to `SWITCHYARD_SECRET_ACME_CORP__WEATHER_TOKEN`
 * (tenant id upper-cased, `-` as `_`, then two underscores), so a tenant can never name another tenant's secret.
 * Other schemes (a vault, an encrypted table) are further adapters of the same port.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";

export interface SecretStore {
  /** The secret named by `ref` for `orgId`; throws FAILED_PRECONDITION when it cannot be resolved. */
  resolve(orgId: string, ref: string): string;
}

export function createEnvSecretStore(secrets: Readonly<Record<string, string>>): SecretStore {
  return {
    resolve(orgId, ref) {
      const match = /^env:([A-Za-z0-9_]+)$/.exec(ref);
      const name = match ? secretEnvName(orgId, match[1]!) : undefined;
      const value = name ? secrets[name] : undefined;
      if (value === undefined || value === "") {
        // The message names the reference, never a value.
        throw new SwitchyardError(
          ErrorCode.FailedPrecondition,
          name
            ? `credential ${ref} of tenant ${orgId} is not configured (set SWITCHYARD_SECRET_${name})`
            : `credential ${ref} of tenant ${orgId} names no secret store this deployment has (use env:NAME)`,
          { details: { reason: "CREDENTIAL_UNRESOLVED", credentialRef: ref } },
        );
      }
      return value;
    },
  };
}

/** The key (after SWITCHYARD_SECRET_) of a tenant's secret NAME. */
export function secretEnvName(orgId: string, name: string): string {
  return `${orgId.toUpperCase().replace(/-/g, "_")}__${name.toUpperCase()}`;
}

/** A fetch that adds the agent's credential as a Bearer token to every request it makes. */
export function withCredential(fetchImpl: typeof globalThis.fetch, secret: string): typeof globalThis.fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set("authorization", `Bearer ${secret}`);
    return fetchImpl(input, { ...init, headers });
  };
}
