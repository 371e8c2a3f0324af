/**
 * Failed console sign-ins per client address (gateway/client-address.ts: behind trusted proxies, the address
 * `X-Forwarded-For` names): after `maxFailures` within `windowMs` the address's failing sign-ins are refused (429)
 * until the oldest failure leaves the window. Only failures count, and only failures are refused: a key that
 * resolves signs in whatever its address has failed (session-route.ts says why that is safe). Per gateway process,
 * in memory: with N replicas an address gets N times the budget. A successful sign-in does not reset the count (a
 * guesser with one valid key must not earn retries).
 */
export interface SignInLimiterOptions {
  /** Failed sign-ins allowed per address within the window. @defaultValue 10 */
  maxFailures?: number;
  /** @defaultValue 5 minutes */
  windowMs?: number;
  /** Addresses tracked at once; the oldest are forgotten beyond it (memory stays bounded). @defaultValue 10 000 */
  maxAddresses?: number;
  now?: () => number;
}

export class SignInLimiter {
  readonly #failures = new Map<string, number[]>();
  readonly #max: number;
  readonly #windowMs: number;
  readonly #maxAddresses: number;
  readonly #now: () => number;

  constructor(options: SignInLimiterOptions = {}) {
    this.#max = options.maxFailures ?? 10;
    this.#windowMs = options.windowMs ?? 5 * 60_000;
    this.#maxAddresses = options.maxAddresses ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** Milliseconds until this address may try again; 0 when it may now. */
  retryAfterMs(address: string): number {
    const recent = this.#recent(address);
    if (recent.length < this.#max) return 0;
    return Math.max(1, recent[recent.length - this.#max]! + this.#windowMs - this.#now());
  }

  recordFailure(address: string): void {
    const recent = this.#recent(address);
    recent.push(this.#now());
    this.#failures.delete(address);
    this.#failures.set(address, recent);
    if (this.#failures.size > this.#maxAddresses) this.#failures.delete(this.#failures.keys().next().value!);
  }

  #recent(address: string): number[] {
    const since = this.#now() - this.#windowMs;
    const recent = (this.#failures.get(address) ?? []).filter((at) => at > since);
    if (recent.length === 0) this.#failures.delete(address);
    return recent;
  }
}
