/**
 * Changes to the stored flag values: checked here, then written with their audit row in ONE transaction through
 * the FlagStore port, so a change is never in force without the record of who made it and why.
 *
 * Audit rows: action `flag`, actor, destination = the scope (`global`, `tenant:T`, `role:R`, `team:T`), verdict
 * `on` / `off`, rule = the flag name, reason. Tenant-scoped changes go to that tenant's chain; global, role and
 * team changes to the `_system` chain (an id no tenant can have: tenant ids start with a letter or digit).
 */
import { operatorChangeEntry, type AuditRow } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Pool, PoolClient } from "../store/db.js";
import type { FlagStore } from "../store/flags/flag-store.js";
import { describeScope, FLAG_NAMES, FLAG_SCOPES, isFlagName, SCOPE_KINDS, type FlagName, type FlagRow, type ScopeKind } from "./flag-types.js";

/** The audit chain of changes that belong to no tenant. */
export const SYSTEM_CHAIN = "_system";

export interface SetFlagRequest {
  /** One of FLAG_NAMES. */
  name: string;
  /** One of the flag's scopes (see FLAG_SCOPES). */
  scopeKind: string;
  /** "" (or omitted) for global; the tenant id, or the role/team name. */
  scope?: string;
  enabled: boolean;
  /** Who made the change (recorded in the row and the audit log). */
  actor: string;
  /** Why (required: an SRE reading the audit log later needs it). */
  reason: string;
}

export interface SetFlagResult extends FlagRow {
  /** The audit row that records the change. */
  audit: AuditRow;
}

const SCOPE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const MAX_TEXT = 1_000;

function invalid(path: string, message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, message, { details: { path } });
}

export { isFlagName } from "./flag-types.js";

/** Checks a name + scope pair; returns them typed. Throws INVALID_ARGUMENT naming the field. */
export function validateFlagScope(name: string, scopeKind: string, scope = ""): { name: FlagName; scopeKind: ScopeKind; scope: string } {
  if (!isFlagName(name)) throw invalid("name", `unknown flag ${JSON.stringify(name)}; flags are ${FLAG_NAMES.join(", ")}`);
  if (!(SCOPE_KINDS as readonly string[]).includes(scopeKind)) {
    throw invalid("scopeKind", `scope kind must be one of ${SCOPE_KINDS.join(", ")}, got ${JSON.stringify(scopeKind)}`);
  }
  const allowed = FLAG_SCOPES[name];
  if (!allowed.includes(scopeKind as ScopeKind)) {
    const how = allowed.map((k) => (k === "global" ? "global (no scope)" : `--${k}`)).join(" or ");
    throw invalid("scopeKind", `${name} has no ${scopeKind} scope; set it ${how}`);
  }
  if (scopeKind === "global") {
    if (scope !== "") throw invalid("scope", `a global flag has no scope, got ${JSON.stringify(scope)}`);
  } else if (!SCOPE_NAME_RE.test(scope)) {
    throw invalid("scope", `${scopeKind} must be a name of letters, digits, "_", ".", "-" (starting with a letter or digit), got ${JSON.stringify(scope)}`);
  }
  return { name, scopeKind: scopeKind as ScopeKind, scope };
}

/** How a scope is written in audit rows and listings: `global`, `tenant:acme`, `role:writer`. */
export { describeScope } from "./flag-types.js";

function text(value: unknown, path: string): string {
  if (typeof value !== "string" || value.trim() === "") throw invalid(path, `${path} must be a non-empty string`);
  if (value.length > MAX_TEXT) throw invalid(path, `${path} must be at most ${MAX_TEXT} characters`);
  return value.trim();
}

/**
 * Sets a flag for one scope and audits the change, in one transaction. With a Pool it opens the transaction;
 * with a client it runs in the caller's (which must be one). Returns the stored row and its audit row.
 */
export async function setFlag(flags: Pick<FlagStore, "set">, db: Pool | PoolClient, request: SetFlagRequest, options: { nowMs?: number } = {}): Promise<SetFlagResult> {
  const { name, scopeKind, scope } = validateFlagScope(request.name, request.scopeKind, request.scope ?? "");
  if (typeof request.enabled !== "boolean") throw invalid("enabled", "enabled must be true or false");
  const actor = text(request.actor, "actor");
  const reason = text(request.reason, "reason");
  const nowMs = options.nowMs ?? Date.now();
  const entry = operatorChangeEntry({
    orgId: scopeKind === "tenant" ? scope : SYSTEM_CHAIN,
    action: "flag",
    actor,
    destination: describeScope(scopeKind, scope),
    verdict: request.enabled ? "on" : "off",
    rule: name,
    reason,
    atMs: nowMs,
  });
  return flags.set(db, { name, scopeKind, scope, enabled: request.enabled, updatedBy: actor, reason, nowMs }, entry);
}
