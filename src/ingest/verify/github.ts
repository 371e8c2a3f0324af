/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`. GitHub signs the body only: the delivery id
 * header is not covered. The MAC is over the raw bytes as received, never over a decoded string: decoding maps
 * every invalid byte to U+FFFD, so a re-encoded MAC would accept ~128 byte-variants of one signed body, each a new
 * delivery by the body hash the replay check uses.
 */
import { equalConstantTime, header, hmacHex, rejected, type SignedDelivery, type Verification } from "./types.js";

const PREFIX = "sha256=";

export function verifyGithub(delivery: SignedDelivery, secrets: readonly string[]): Verification {
  const signature = header(delivery, "x-hub-signature-256");
  if (!signature) return rejected("X-Hub-Signature-256 is missing");
  if (!signature.startsWith(PREFIX)) return rejected("X-Hub-Signature-256 is not sha256=<hex>");
  if (delivery.body.length === 0) return rejected("the body is empty");
  const hex = signature.slice(PREFIX.length).toLowerCase();
  for (const secret of secrets) if (equalConstantTime(hex, hmacHex(secret, delivery.body))) return { ok: true };
  return rejected("X-Hub-Signature-256 does not match");
}
