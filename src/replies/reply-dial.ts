/**
 * One origin reply's dial, in two parts the sender (reply-sender.ts) runs in order: everything checked before a
 * byte leaves (`prepareDial`: the address, the tenant's switch, the connection and its allowlist, the text's
 * length, the secret opened through the vault), then the provider request through the egress guard, which admits
 * the connection's API base URL's host alone (`dialProvider`).
 */
import { SwitchyardError } from "../errors.js";
import { accountKeyOf, connectionKindOf, targetOf, validateAddress, type ReplyAddress } from "../core/reply-address.js";
import { createGuardedFetch, type EgressResolver } from "../foreign/egress/index.js";
import type { Pool } from "../store/db.js";
import { openConnectionSecret } from "../vault/connection-secret.js";
import { targetAllowed } from "../vault/connection-select.js";
import { findConnection, type ConnectionRecord } from "../vault/connection-store.js";
import type { SecretCipher } from "../vault/secret-cipher.js";
import type { ConnectionStore } from "../store/vault/connection-store.js";
import { REPLY_PROVIDERS, type ProviderResult } from "./providers/index.js";
import type { ClaimedReply } from "../store/replies/reply-store.js";

export interface ReplyEgressOptions {
  /** SWITCHYARD_EGRESS_ALLOWED_NETWORKS: private ranges a connection's API may resolve to. @defaultValue none */
  allowedNetworks?: readonly string[];
  /** Name resolution, TCP and TLS must finish within this (ms). @defaultValue min(5 000, timeoutMs) */
  connectTimeoutMs?: number;
  /** Largest provider answer read (bytes). @defaultValue 1 MiB */
  maxResponseBytes?: number;
  /** @defaultValue the system resolver */
  resolver?: EgressResolver;
  /** Trust anchors for https (tests, private CAs). */
  ca?: string | Buffer | Array<string | Buffer>;
}

/** A `refuse` fails the row without a request; a `notReady` puts it back to pending as an attempt. */
export type PreparedDial =
  | { refuse: { code: string; message: string } }
  | { notReady: { code: string; message: string } }
  | { connection: ConnectionRecord; address: ReplyAddress; secret: string };

export interface PrepareDeps {
  pool: Pool;
  /** The connections port (`runtime.stores.connections`): the row and its sealed secret, read on `pool`. */
  connections: Pick<ConnectionStore, "find" | "sealedSecret">;
  cipher: SecretCipher;
  /** Checked right before each dial (REPLY_ENABLED). @defaultValue always on */
  replyEnabled?: (orgId: string) => boolean;
}

/** Everything checked before a dial; nothing is written either way. A database failure is thrown. */
export async function prepareDial(deps: PrepareDeps, reply: ClaimedReply): Promise<PreparedDial> {
  if (reply.replyTo === null || reply.replyTo === undefined) return { refuse: { code: "no_reply_address", message: "the task has no reply address" } };
  let address: ReplyAddress;
  try {
    address = validateAddress(reply.replyTo);
  } catch (error) {
    return { refuse: { code: "invalid_address", message: (error as Error).message } };
  }
  if (deps.replyEnabled && !deps.replyEnabled(reply.orgId)) {
    return { refuse: { code: "reply_disabled", message: `replies are switched off for tenant ${reply.orgId} (REPLY_ENABLED); nothing was sent` } };
  }
  if (reply.taskOrgId !== reply.orgId) return { refuse: { code: "no_connection", message: "the reply's row does not belong to the task's tenant" } };
  // Read through the vault, scoped to the reply's tenant: another tenant's connection id is simply not found.
  const connection = reply.connectionId === null ? undefined : await findConnection(deps.connections, deps.pool, reply.orgId, reply.connectionId);
  if (!connection) return { refuse: { code: "no_connection", message: "the reply's connection no longer exists for the task's tenant" } };
  if (connection.kind !== connectionKindOf(address) || connection.accountKey !== accountKeyOf(address)) {
    return {
      refuse: {
        code: "address_mismatch",
        message: `the address (${connectionKindOf(address)} ${accountKeyOf(address)}) does not match the connection (${connection.kind} ${connection.accountKey}); nothing was sent`,
      },
    };
  }
  // The allowlist may have narrowed since the verb selected the connection: checked again at the last moment.
  if (!targetAllowed(connection.targets, address)) {
    return { refuse: { code: "target_not_allowed", message: `the connection's targets do not admit ${targetOf(address)}; nothing was sent` } };
  }
  const limit = REPLY_PROVIDERS[connection.kind].maxTextChars;
  if (reply.text.length > limit) return { refuse: { code: "text_too_long", message: `the text is ${reply.text.length} characters; ${connection.kind} takes at most ${limit}` } };
  let secret: string;
  try {
    // The vault's one opening point, scoped to the row's tenant as well.
    secret = await openConnectionSecret(deps.connections, deps.pool, deps.cipher, reply.orgId, connection.id);
  } catch (error) {
    // A missing row or an envelope no key of the ring opens (a key may be added to the ring): retried, then
    // failed. A database failure is thrown, and retried the same way.
    if (!(error instanceof SwitchyardError)) throw error;
    return { notReady: { code: "connection_unusable", message: `the connection's secret cannot be opened: ${error.message}` } };
  }
  return { connection, address, secret };
}

export interface DialDeps {
  egress: ReplyEgressOptions;
  /** One provider request's deadline (ms). */
  timeoutMs: number;
  maxRetryAfterMs: number;
  clock: () => number;
}

/** The provider request: the credential goes to the connection's API base URL's host and nowhere else. */
export async function dialProvider(deps: DialDeps, connection: ConnectionRecord, address: ReplyAddress, secret: string, text: string): Promise<ProviderResult> {
  let host: string;
  try {
    host = new URL(connection.apiBaseUrl).host;
  } catch {
    return { outcome: "failed", code: "egress_refused", message: "the connection's API base URL is not a URL" };
  }
  const { egress } = deps;
  const guardedFetch = createGuardedFetch({
    allowHosts: [host],
    allowedNetworks: egress.allowedNetworks ?? [],
    connectTimeoutMs: Math.min(egress.connectTimeoutMs ?? 5_000, deps.timeoutMs),
    totalTimeoutMs: deps.timeoutMs,
    maxResponseBytes: egress.maxResponseBytes ?? 1024 * 1024,
    // We sort 429 and 5xx ourselves: a 5xx is `unknown` here, never a retry.
    transientStatusAsError: false,
    ...(egress.resolver ? { resolver: egress.resolver } : {}),
    ...(egress.ca !== undefined ? { ca: egress.ca } : {}),
  });
  return REPLY_PROVIDERS[connection.kind].post({ address, text, apiBaseUrl: connection.apiBaseUrl, secret, fetch: guardedFetch, now: deps.clock, maxRetryAfterMs: deps.maxRetryAfterMs });
}
