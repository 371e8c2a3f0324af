/**
 * Who is calling the API, as decided by the API key alone. A tenant key acts for exactly one tenant; an admin key
 * (an SRE's) acts for none until it names one.
 */

/** The key that authenticated a request, as recorded in actor names and logs (never the secret). */
export interface KeyIdentity {
  keyId: string;
  /** The name given at creation, e.g. `ci` or `alice`. */
  keyName: string;
  /** The key's first characters (`sy_` + 8), what listings show. */
  keyPrefix: string;
}

export type Principal = ({ kind: "tenant"; orgId: string } | { kind: "admin" }) & KeyIdentity;

/** How a principal is named in audit rows and decisions: `apikey:NAME`. */
export function principalActor(principal: KeyIdentity): string {
  return `apikey:${principal.keyName}`;
}

/**
 * The actor recorded for an action: what the caller says (`--actor alice`) plus the key that vouches for it, so a
 * tenant cannot pass an action off as someone else's without the key showing.
 */
export function recordedActor(principal: KeyIdentity, claimed: string | undefined): string {
  const said = claimed?.trim();
  const key = principalActor(principal);
  return said ? `${said} (${key})` : key;
}
