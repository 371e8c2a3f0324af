/**
 * Cairn signs with Standard Webhooks (https://www.standardwebhooks.com): `webhook-id`, `webhook-timestamp`
 * (seconds, within 5 minutes) and `webhook-signature`, a space-separated list of `v1,<base64 HMAC-SHA256 of
 * "{id}.{timestamp}.{body}">` keyed with the bytes of the `whsec_<base64>` secret. Computed here over the RAW body
 * bytes: the `standardwebhooks` package decodes a Buffer body to a string first, which maps every invalid byte to
 * U+FFFD, so one signed body would verify in ~128 byte-variants, each a new delivery. The timestamp is checked
 * first so a stale delivery is told from a forged one (and against the injected clock).
 */
import { createHmac } from "node:crypto";
import { equalConstantTime, header, rejected, TIMESTAMP_TOLERANCE_MS, type SignedDelivery, type Verification } from "./types.js";

const SECRET_PREFIX = "whsec_";

export function verifyCairn(delivery: SignedDelivery, secrets: readonly string[]): Verification {
  const id = header(delivery, "webhook-id");
  const timestamp = header(delivery, "webhook-timestamp");
  const signature = header(delivery, "webhook-signature");
  if (!id || !timestamp || !signature) return rejected("webhook-id, webhook-timestamp or webhook-signature is missing");
  if (!/^[0-9]{1,12}$/.test(timestamp)) return rejected("webhook-timestamp is not a Unix time");
  if (Math.abs(delivery.nowMs - Number(timestamp) * 1000) > TIMESTAMP_TOLERANCE_MS) {
    return { ok: false, outcome: "rejected_stale", reason: "webhook-timestamp is more than 5 minutes from now" };
  }
  const offered = signature
    .split(" ")
    .map((entry) => entry.split(","))
    .filter(([version, value]) => version === "v1" && value !== undefined)
    .map(([, value]) => value!);
  for (const secret of secrets) {
    const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
    if (key.length === 0) continue;
    const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(delivery.body).digest("base64");
    if (offered.some((value) => equalConstantTime(value, expected))) return { ok: true };
  }
  return rejected("webhook-signature does not match");
}
