/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`, checked with GitHub's own
 * `@octokit/webhooks-methods` (constant time). GitHub signs the body only: the delivery id header is not covered.
 */
import { verify } from "@octokit/webhooks-methods";
import { header, rejected, type SignedDelivery, type Verification } from "./types.js";

export async function verifyGithub(delivery: SignedDelivery, secrets: readonly string[]): Promise<Verification> {
  const signature = header(delivery, "x-hub-signature-256");
  if (!signature) return rejected("X-Hub-Signature-256 is missing");
  if (delivery.body.length === 0) return rejected("the body is empty");
  const payload = delivery.body.toString("utf8");
  for (const secret of secrets) if (await verify(secret, payload, signature)) return { ok: true };
  return rejected("X-Hub-Signature-256 does not match");
}
