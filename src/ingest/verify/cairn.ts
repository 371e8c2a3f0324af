/**
 * Cairn signs with Standard Webhooks (https://www.standardwebhooks.com): `webhook-id`, `webhook-timestamp`
 * (seconds, within 5 minutes) and `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256 of
 * "{id}.{timestamp}.{body}">` keyed with the bytes of the `whsec_<base64>` secret. The `standardwebhooks` package
 * checks the signature list in constant time; the timestamp is checked here first so a stale delivery is told
 * from a forged one (and against the injected clock).
 */
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { header, rejected, TIMESTAMP_TOLERANCE_MS, type SignedDelivery, type Verification } from "./types.js";

export function verifyCairn(delivery: SignedDelivery, secrets: readonly string[]): Verification {
  const id = header(delivery, "webhook-id");
  const timestamp = header(delivery, "webhook-timestamp");
  const signature = header(delivery, "webhook-signature");
  if (!id || !timestamp || !signature) return rejected("webhook-id, webhook-timestamp or webhook-signature is missing");
  if (!/^[0-9]{1,12}$/.test(timestamp)) return rejected("webhook-timestamp is not a Unix time");
  if (Math.abs(delivery.nowMs - Number(timestamp) * 1000) > TIMESTAMP_TOLERANCE_MS) {
    return { ok: false, outcome: "rejected_stale", reason: "webhook-timestamp is more than 5 minutes from now" };
  }
  const headers = { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": signature };
  for (const secret of secrets) {
    try {
      new Webhook(secret).verify(delivery.body, headers);
      return { ok: true };
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
    }
  }
  return rejected("webhook-signature does not match");
}
