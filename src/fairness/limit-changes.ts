/**
 * Changes to the stored dispatch limits, like flags (src/flags/flag-changes.ts): checked here, then written with
 * their audit row in ONE transaction through the LimitStore port. Audit rows: action `limit`, actor, destination =
 * the scope (`tenant:T`, `tenant:T/role:R`, `role:R`), verdict `set` / `cleared`, rule = what was set
 * (`maxInFlight=3 ratePerSec=50 …`), reason. A tenant's limits go to its own chain, a destination's capacity to the
 * `_system` chain.
 */
import { operatorChangeEntry, type AuditEntry, type AuditRow } from "../domain.js";
import { ErrorCode, SwitchyardError } from "../errors.js";
import { SYSTEM_CHAIN } from "../flags/flag-changes.js";
import type { Pool, PoolClient } from "../store/db.js";
import type { LimitStore } from "../store/limits/limit-store.js";
import { validateLimit, type DispatchLimit, type DispatchLimitRow } from "../core/limits.js";

export interface LimitChange {
  actor: string;
  reason: string;
}

function text(value: unknown, path: string): string {
  if (typeof value !== "string" || value.trim() === "") throw new SwitchyardError(ErrorCode.InvalidArgument, `${path} must be a non-empty string`, { details: { path } });
  if (value.length > 1_000) throw new SwitchyardError(ErrorCode.InvalidArgument, `${path} must be at most 1000 characters`, { details: { path } });
  return value.trim();
}

/** `tenant:acme/role:writer`, `tenant:acme`, `role:writer`. */
export function describeLimitScope(orgId: string, destination: string): string {
  if (orgId === "") return destination;
  return destination === "" ? `tenant:${orgId}` : `tenant:${orgId}/${destination}`;
}

function describeValues(limit: DispatchLimit): string {
  const parts: string[] = [];
  if (limit.maxInFlight !== null) parts.push(`maxInFlight=${limit.maxInFlight}`);
  if (limit.ratePerSec !== null) parts.push(`ratePerSec=${limit.ratePerSec}`);
  if (limit.burst !== null) parts.push(`burst=${limit.burst}`);
  if (limit.weight !== null) parts.push(`weight=${limit.weight}`);
  return parts.join(" ");
}

function auditEntry(orgId: string, destination: string, verdict: string, rule: string, change: LimitChange, nowMs: number): AuditEntry {
  return operatorChangeEntry({
    orgId: orgId === "" ? SYSTEM_CHAIN : orgId,
    action: "limit",
    actor: change.actor,
    destination: describeLimitScope(orgId, destination),
    verdict,
    rule,
    reason: change.reason,
    atMs: nowMs,
  });
}

/**
 * Sets (replaces) the limits of one scope and audits the change. Fields left null are not limited. With a Pool it
 * opens the transaction; with a client it runs in the caller's (which must be one).
 */
export async function setLimit(
  limits: Pick<LimitStore, "set">,
  db: Pool | PoolClient,
  limit: DispatchLimit,
  change: LimitChange,
  options: { nowMs?: number } = {},
): Promise<DispatchLimitRow & { audit: AuditRow }> {
  const checked = validateLimit(limit);
  const actor = text(change.actor, "actor");
  const reason = text(change.reason, "reason");
  const nowMs = options.nowMs ?? Date.now();
  return limits.set(db, { ...checked, updatedBy: actor, reason, nowMs }, auditEntry(checked.orgId, checked.destination, "set", describeValues(checked), { actor, reason }, nowMs));
}

/** Removes the limits of one scope (audited); false when it had none. */
export async function clearLimit(
  limits: Pick<LimitStore, "clear">,
  db: Pool | PoolClient,
  scope: { orgId: string; destination: string },
  change: LimitChange,
  options: { nowMs?: number } = {},
): Promise<boolean> {
  if (scope.orgId === "" && scope.destination === "") throw new SwitchyardError(ErrorCode.InvalidArgument, "a limit names a tenant, a destination, or both", { details: { path: "tenant" } });
  const actor = text(change.actor, "actor");
  const reason = text(change.reason, "reason");
  const nowMs = options.nowMs ?? Date.now();
  return limits.clear(db, scope, auditEntry(scope.orgId, scope.destination, "cleared", "", { actor, reason }, nowMs));
}
