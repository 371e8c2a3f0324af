/**
 * Slack signing secrets: `X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:{X-Slack-Request-Timestamp}:{body}">`, the
 * timestamp (seconds) within 5 minutes of now, so a captured request cannot be replayed later.
 */
import { equalConstantTime, header, hmacHex, rejected, TIMESTAMP_TOLERANCE_MS, type SignedDelivery, type Verification } from "./types.js";

export function verifySlack(delivery: SignedDelivery, secrets: readonly string[]): Verification {
  const signature = header(delivery, "x-slack-signature");
  const timestamp = header(delivery, "x-slack-request-timestamp");
  if (!signature || !timestamp) return rejected("X-Slack-Signature or X-Slack-Request-Timestamp is missing");
  if (!/^[0-9]{1,12}$/.test(timestamp)) return rejected("X-Slack-Request-Timestamp is not a Unix time");
  if (Math.abs(delivery.nowMs - Number(timestamp) * 1000) > TIMESTAMP_TOLERANCE_MS) {
    return { ok: false, outcome: "rejected_stale", reason: "X-Slack-Request-Timestamp is more than 5 minutes from now" };
  }
  for (const secret of secrets) {
    if (equalConstantTime(signature, `v0=${hmacHex(secret, `v0:${timestamp}:`, delivery.body)}`)) return { ok: true };
  }
  return rejected("X-Slack-Signature does not match");
}
