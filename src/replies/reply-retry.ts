/**
 * When a dial is tried again: only when nothing was written (the preparation failed, the connection failed, a
 * 429), after the provider's Retry-After (capped) or a backoff, and only until the row has used its dials. Anything
 * that may have reached the provider is never retried (`unknown`).
 */
import type { DialOutcome } from "./dial-outcome.js";
import type { ReplyFinish } from "../store/replies/reply-store.js";

export interface RetryPolicy {
  retryBaseMs: number;
  maxRetryAfterMs: number;
  /** Dials of one reply before it is `failed`. */
  dialAttempts: number;
}

/** The row's outcome for a provider's answer; `dialAttempts`: the row's dials so far, this one included. */
export function toFinish(policy: RetryPolicy, result: DialOutcome, dialAttempts: number): ReplyFinish {
  switch (result.outcome) {
    case "sent":
      return { state: "sent", providerId: result.providerId, permalink: result.permalink };
    case "failed":
    case "unknown":
      return { state: result.outcome, code: result.code, message: result.message };
    case "retry":
      return retryOrFail(policy, dialAttempts, result.code, result.message, result.retryAfterMs);
  }
}

/** The provider's Retry-After (capped), or base × 2^(dials − 1) up to 5 min. */
export function retryDelay(policy: RetryPolicy, dialAttempts: number, retryAfter?: number): number {
  return Math.min(retryAfter ?? Math.min(policy.retryBaseMs * 2 ** (dialAttempts - 1), 5 * 60_000), policy.maxRetryAfterMs);
}

/** Nothing was written: pending again after a delay, or `failed` once the row used its dials. */
export function retryOrFail(policy: RetryPolicy, dialAttempts: number, code: string, message: string, retryAfter?: number): ReplyFinish {
  if (dialAttempts >= policy.dialAttempts) return { state: "failed", code, message: `${message} (after ${dialAttempts} dials)` };
  return { state: "pending", code, message, delayMs: retryDelay(policy, dialAttempts, retryAfter) };
}
