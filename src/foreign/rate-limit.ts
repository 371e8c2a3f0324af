/**
 * A token bucket per key (the tenant, for A2A callbacks): `ratePerSec` tokens a second, bursts up to `burst`.
 * In memory, per process: each gateway replica admits its own share.
 */
export interface TokenBucketOptions {
  ratePerSec: number;
  /** @defaultValue ratePerSec */
  burst?: number;
  /** Buckets kept at most; idle ones go first. @defaultValue 10_000 */
  maxKeys?: number;
  clock?: () => number;
}

export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly clock: () => number;
  private readonly burst: number;

  constructor(private readonly options: TokenBucketOptions) {
    this.clock = options.clock ?? Date.now;
    this.burst = Math.max(1, options.burst ?? options.ratePerSec);
  }

  /** Takes one token for `key`; false when the bucket is empty. */
  take(key: string): boolean {
    const now = this.clock();
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.options.ratePerSec);
    bucket.at = now;
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
    while (this.buckets.size > (this.options.maxKeys ?? 10_000)) this.buckets.delete(this.buckets.keys().next().value!);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}
