/**
 * Which connection may answer a reply address: the one of the TASK's tenant whose kind and account key match the
 * address exactly (at most one, by the unique index), and whose targets allowlist, when set, admits it.
 *
 * The tenant is always the task's, passed in by the caller: never the worker's, never the webhook owner's. The query
 * filters by it explicitly because the reply path runs as the table owner, outside row-level security. The row is
 * read through the connections port (store/vault/connection-store.ts).
 */
import type { Queryable } from "../store/db.js";
import type { ConnectionRecord, ConnectionStore } from "../store/vault/connection-store.js";
import { accountKeyOf, connectionKindOf, displayAddress, targetOf, type ReplyAddress } from "../core/reply-address.js";

export type ConnectionSelection =
  | { ok: true; connection: ConnectionRecord }
  | { ok: false; code: "no_connection" | "target_not_allowed"; message: string };

/** `*` within one path segment; matched whole. */
function globMatches(glob: string, value: string, flags: string): boolean {
  const pattern = glob
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\/-]/g, "\\$&"))
    .join("[^/]*");
  return new RegExp(`^${pattern}$`, flags).test(value);
}

/**
 * Whether an allowlist admits an address (an empty list admits everything). Per kind: forges match `owner/name`
 * globs case-insensitively (GitHub and Gitea owner and repository names are), `*` alone admits every repository;
 * Slack matches channel ids exactly; Cairn matches artifact id globs case-sensitively.
 */
export function targetAllowed(targets: readonly string[], address: ReplyAddress): boolean {
  if (targets.length === 0) return true;
  const target = targetOf(address);
  switch (address.kind) {
    case "forge_comment":
      return targets.some((glob) => glob === "*" || globMatches(glob, target, "i"));
    case "slack_thread":
      return targets.some((channel) => channel === target);
    case "cairn_comment":
      return targets.some((glob) => globMatches(glob, target, ""));
  }
}

export async function selectConnection(connections: Pick<ConnectionStore, "findByAccount">, db: Queryable, orgId: string, address: ReplyAddress): Promise<ConnectionSelection> {
  const kind = connectionKindOf(address);
  const accountKey = accountKeyOf(address);
  const connection = await connections.findByAccount(db, orgId, kind, accountKey);
  if (!connection) {
    return { ok: false, code: "no_connection", message: `tenant ${orgId} has no ${kind} connection for ${accountKey}; add one with \`switchyard connection add --kind ${kind} --account ${accountKey}\`` };
  }
  if (!targetAllowed(connection.targets, address)) {
    return {
      ok: false,
      code: "target_not_allowed",
      message: `the ${kind} connection for ${accountKey} does not allow ${targetOf(address)} (${displayAddress(address)}); its targets are ${connection.targets.join(", ")}`,
    };
  }
  return { ok: true, connection };
}
