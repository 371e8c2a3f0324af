/**
 * What a per-source verifier sees and answers. Verifiers are pure apart from the HMACs: headers, the raw body bytes,
 * the endpoint's secrets (the current one, and a rotated-out one still within its grace) and the time.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

export interface SignedDelivery {
  /** Lower-case header names, as Node gives them. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The raw body, exactly as received: signatures are over these bytes. */
  body: Buffer;
  nowMs: number;
}

export type Verification = { ok: true } | { ok: false; outcome: "rejected_signature" | "rejected_stale"; reason: string };

/** How far a signed timestamp may be from now (Slack and Standard Webhooks both use 5 minutes). */
export const TIMESTAMP_TOLERANCE_MS = 5 * 60 * 1000;

export function header(delivery: SignedDelivery, name: string): string | undefined {
  const value = delivery.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === "" ? undefined : first;
}

export function rejected(reason: string): Verification {
  return { ok: false, outcome: "rejected_signature", reason };
}

/** Compares two strings in constant time for their length (unequal lengths answer false at once). */
export function equalConstantTime(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function hmacHex(secret: string, ...parts: Array<string | Buffer>): string {
  const mac = createHmac("sha256", secret);
  for (const part of parts) mac.update(part);
  return mac.digest("hex");
}
