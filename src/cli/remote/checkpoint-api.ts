/**
 * The operator's checkpoint commands (`audit checkpoint`, `audit checkpoints export|rotate-key|keys`) as one client
 * of the gateway's CheckpointService (checkpoint-client.ts), run in-process in direct mode (direct-transport.ts, the
 * operator acting as an admin for no tenant), so the handlers are the one implementation. Always direct, as the
 * AdminService commands are (admin-api.ts): a `--url` set for tenant work carries a tenant key, which
 * CheckpointService refuses.
 *
 * An operator's own signing key (`--key-file`) stays in this process: the client reads the head through the
 * service, signs it here (governance/checkpoint-signing.ts, pure) and hands the service only the signature.
 */
import type { SignOutcome } from "../../gateway/convert/checkpoints.js";
import type { CheckpointKeyInfo } from "../../store/audit/checkpoint-store.js";
import type { CliContext } from "../context.js";

// The shapes the API answers in, named here so commands speak the client's vocabulary.
export type { CheckpointKeyInfo, SignOutcome };

export interface CheckpointApi {
  /**
   * Signs the tenant's chain head now: with `operatorKeyPem` (a PKCS#8 PEM Ed25519 private key) here, else with the
   * database-held key by the service. A bad key is CONFIG before anything is called.
   */
  sign(orgId: string, options?: { operatorKeyPem?: string }): Promise<SignOutcome>;
  /** Every checkpoint (of one tenant, or of all when `orgId` is undefined) as JSON lines. */
  exportCheckpoints(orgId: string | undefined): Promise<string>;
  /** Retires the active database-held key and creates a new one; its kid. */
  rotateKey(): Promise<string>;
  /** The signing keys, newest first. */
  listKeys(): Promise<CheckpointKeyInfo[]>;
}

/** Runs a command's work against the CheckpointService, in-process (see above); always closes what it opened. */
export async function withCheckpointApi<T>(ctx: CliContext, fn: (api: CheckpointApi) => Promise<T>): Promise<T> {
  // Loaded here, not at the top: every command's registration imports this file.
  const [{ openDirectTransport }, { createClientCheckpointApi }] = await Promise.all([import("./direct-transport.js"), import("./checkpoint-client.js")]);
  const direct = openDirectTransport(ctx, undefined);
  try {
    return await fn(createClientCheckpointApi(direct.transport, { where: "the database (direct mode)" }));
  } finally {
    await direct.close();
  }
}
