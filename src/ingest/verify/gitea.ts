/**
 * Gitea (and Forgejo): `X-Gitea-Signature` is the hex HMAC-SHA256 of the raw body, without a prefix.
 */
import { equalConstantTime, header, hmacHex, rejected, type SignedDelivery, type Verification } from "./types.js";

export function verifyGitea(delivery: SignedDelivery, secrets: readonly string[]): Verification {
  const signature = header(delivery, "x-gitea-signature")?.toLowerCase();
  if (!signature) return rejected("X-Gitea-Signature is missing");
  for (const secret of secrets) if (equalConstantTime(signature, hmacHex(secret, delivery.body))) return { ok: true };
  return rejected("X-Gitea-Signature does not match");
}
