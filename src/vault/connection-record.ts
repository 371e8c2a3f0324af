/**
 * A connection as the rest of the code sees it: every column of `connections` except the sealed secret. The
 * ciphertext never leaves this directory's queries; only `openConnectionSecret` (connection-secret.ts) opens it.
 */
import type { ConnectionKind } from "../core/reply-address.js";

export interface ConnectionRecord {
  id: string;
  orgId: string;
  kind: ConnectionKind;
  /** Forge host (`github.com`), Slack team id (`T…`) or Cairn base URL: what an address must name exactly. */
  accountKey: string;
  /** Where the credential is sent; no trailing slash (`https://api.github.com`, `https://git.example/api/v1`). */
  apiBaseUrl: string;
  /** Empty: every target of the account; else repository globs, Slack channel ids or Cairn artifact id globs. */
  targets: string[];
  /** `fp_` + 16 hex (keyed HMAC of the secret): what listings show instead of the secret. */
  fingerprint: string;
  /** Learnt from our own Slack posts (echo suppression). */
  botId: string | null;
  appId: string | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
  rotatedAt: string | null;
}

/** The columns a record is read from; `secret_ciphertext` is deliberately not among them. */
export const CONNECTION_COLUMNS =
  "id, org_id, kind, account_key, api_base_url, targets, secret_fingerprint, bot_id, app_id, created_by, created_at, updated_at, rotated_at";

export function connectionFromRow(row: Record<string, unknown>): ConnectionRecord {
  const iso = (v: unknown): string => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());
  return {
    id: row.id as string,
    orgId: row.org_id as string,
    kind: row.kind as ConnectionKind,
    accountKey: row.account_key as string,
    apiBaseUrl: row.api_base_url as string,
    targets: (row.targets as string[] | null) ?? [],
    fingerprint: row.secret_fingerprint as string,
    botId: (row.bot_id as string | null) ?? null,
    appId: (row.app_id as string | null) ?? null,
    createdBy: row.created_by as string,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    rotatedAt: row.rotated_at === null || row.rotated_at === undefined ? null : iso(row.rotated_at),
  };
}

/** The AAD every connection secret is sealed under: a ciphertext copied into another row does not open there. */
export function connectionAad(connectionId: string): string {
  return `connection:${connectionId}`;
}
