/**
 * A flag's history: every change, newest first, read back from the audit chains that `setFlag` writes in the same
 * transaction as the change (so the history cannot miss one). Tenant-scoped changes sit in the tenant's chain,
 * the others in `_system`; the FlagStore reads both at once (the caller is an operator: owner pool, no tenant scope).
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { FlagStore } from "../store/flags/flag-store.js";
import { describeScope, FLAG_NAMES, isFlagName, type ScopeKind } from "./flag-types.js";

export interface FlagHistoryFilter {
  name?: string;
  /** With `scope` ("" for global): only changes of this scope. */
  scopeKind?: ScopeKind;
  scope?: string;
  /** @defaultValue 50, at most 500 */
  limit?: number;
  /** Only changes recorded before this time (ms since the epoch): the next page. */
  beforeMs?: number;
}

export interface FlagChangeRecord {
  name: string;
  scopeKind: ScopeKind;
  scope: string;
  enabled: boolean;
  actor: string;
  reason: string;
  atMs: number;
  chain: string;
  seq: number;
}

export const MAX_FLAG_HISTORY = 500;

function invalid(path: string, message: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, `${path}: ${message}`, { details: { path } });
}

/** `global`, `tenant:acme` → kind and scope (as `describeScope` wrote them). */
function parseScope(destination: string): { scopeKind: ScopeKind; scope: string } {
  if (destination === "global") return { scopeKind: "global", scope: "" };
  const colon = destination.indexOf(":");
  return { scopeKind: destination.slice(0, colon) as ScopeKind, scope: destination.slice(colon + 1) };
}

export async function listFlagHistory(flags: Pick<FlagStore, "history">, db: Queryable, filter: FlagHistoryFilter = {}): Promise<FlagChangeRecord[]> {
  const limit = filter.limit || 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_FLAG_HISTORY) throw invalid("limit", `must be from 1 to ${MAX_FLAG_HISTORY}`);
  const name = filter.name?.trim() || null;
  if (name !== null && !isFlagName(name)) throw invalid("name", `unknown flag ${JSON.stringify(name)}; flags are ${FLAG_NAMES.join(", ")}`);
  if (filter.scopeKind === undefined && filter.scope) throw invalid("scope_kind", "name the scope kind of the scope");
  const destination = filter.scopeKind === undefined ? null : describeScope(filter.scopeKind, filter.scope ?? "");
  const rows = await flags.history(db, { name, destination, beforeMs: filter.beforeMs || null, limit });
  return rows.map((row) => ({
    name: row.rule,
    ...parseScope(row.destination),
    enabled: row.verdict === "on",
    actor: row.actor,
    reason: row.reason,
    atMs: row.atMs,
    chain: row.chain,
    seq: row.seq,
  }));
}
