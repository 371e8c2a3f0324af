/**
 * Which of the TASK's tenant's connections may answer an address: the one whose kind and account key match the
 * address exactly (at most one, by the table's unique key), and whose `targets` allowlist, when not empty, admits
 * the address's target. Never another tenant's connection, whatever the address names.
 *
 * A minimal adapter over table `connections`; the vault (src/vault/, helper A) provides the full one with the
 * same signature, and the engine takes either through `ReplyFactsOptions.selectConnection`.
 */
import { accountKeyOf, connectionKindOf, targetOf, type ReplyAddress } from "../origin/reply-address.js";
import type { Queryable } from "../store/db.js";
import type { ConnectionSelection } from "./reply-types.js";

export type ConnectionSelector = (db: Queryable, orgId: string, address: ReplyAddress) => Promise<ConnectionSelection>;

export const selectConnection: ConnectionSelector = async (db, orgId, address) => {
  const kind = connectionKindOf(address);
  const accountKey = accountKeyOf(address);
  const { rows } = await db.query<{ id: string; targets: string[] }>(
    "SELECT id, targets FROM connections WHERE org_id = $1 AND kind = $2 AND account_key = $3",
    [orgId, kind, accountKey],
  );
  const row = rows[0];
  if (!row) return { ok: false, code: "no_connection", message: `tenant ${orgId} has no ${kind} connection for ${accountKey}` };
  const target = targetOf(address);
  if (row.targets.length > 0 && !row.targets.some((glob) => globMatches(glob, target))) {
    return { ok: false, code: "target_not_allowed", message: `connection ${row.id} does not allow ${target} (targets: ${row.targets.join(", ")})` };
  }
  return { ok: true, connection: { id: row.id, kind, accountKey } };
};

/** `*` matches any run of characters except `/` (so `acme/*` admits `acme/app`, not `acme/app/x`); the rest is literal. */
export function globMatches(glob: string, value: string): boolean {
  const pattern = glob
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join("[^/]*");
  return new RegExp(`^${pattern}$`).test(value);
}
