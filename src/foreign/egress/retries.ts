/**
 * Retrying a foreign call: transient failures only, exponential backoff with jitter, a server's `Retry-After`
 * honoured up to the cap, and the caller's signal obeyed between attempts.
 */
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { isTransientFailure } from "./egress-errors.js";

export interface RetryOptions {
  /** Attempts in all, the first included (1 = no retry). */
  attempts: number;
  /** Delay cap before the second attempt (ms); doubles each attempt. */
  baseDelayMs: number;
  /** No delay exceeds this (ms). */
  maxDelayMs: number;
  signal?: AbortSignal;
  /** @defaultValue {@link isTransientFailure} (a SwitchyardError's `details.transient`, or a transient socket code) */
  isTransient?: (error: unknown) => boolean;
  /** Told before each wait, for logs and metrics. */
  onRetry?: (info: { error: unknown; attempt: number; delayMs: number }) => void;
  /** Source of randomness for the jitter, in [0, 1). @defaultValue Math.random */
  random?: () => number;
}

/**
 * Runs `fn(attempt)` (attempt counts from 1) until it succeeds, fails with a non-transient error, or `attempts` are
 * used up; the last error is rethrown unchanged. Aborting `signal` ends a wait early with a Cancelled error.
 */
export async function withRetries<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const attempts = Math.max(1, Math.floor(options.attempts));
  const isTransient = options.isTransient ?? isTransientFailure;
  const random = options.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    throwIfAborted(options.signal, undefined);
    try {
      return await fn(attempt);
    } catch (error) {
      if (attempt >= attempts || !isTransient(error) || options.signal?.aborted) throw error;
      const delayMs = backoffDelay(attempt, options, random, error);
      options.onRetry?.({ error, attempt, delayMs });
      await sleep(delayMs, options.signal, error);
    }
  }
}

/**
 * "Equal jitter": half of the exponential step is kept, half is random, so retries spread out but never collapse to
 * zero. A `details.retryAfterMs` from the server raises the delay, still within `maxDelayMs`.
 */
export function backoffDelay(
  attempt: number,
  options: Pick<RetryOptions, "baseDelayMs" | "maxDelayMs">,
  random: () => number = Math.random,
  error?: unknown,
): number {
  const step = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  const jittered = step / 2 + random() * (step / 2);
  const asked = error instanceof SwitchyardError && typeof error.details.retryAfterMs === "number" ? error.details.retryAfterMs : 0;
  return Math.round(Math.min(options.maxDelayMs, Math.max(jittered, asked)));
}

function sleep(ms: number, signal: AbortSignal | undefined, lastError: unknown): Promise<void> {
  throwIfAborted(signal, lastError);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelled(signal!, lastError));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function throwIfAborted(signal: AbortSignal | undefined, lastError: unknown): void {
  if (signal?.aborted) throw cancelled(signal, lastError);
}

function cancelled(signal: AbortSignal, lastError: unknown): SwitchyardError {
  return new SwitchyardError(ErrorCode.Cancelled, "retries cancelled by the caller", {
    cause: lastError ?? signal.reason,
    details: { transient: false },
  });
}
