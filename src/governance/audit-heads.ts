/**
 * The audit-chain heads a coordinator last committed, kept in memory per tenant (issue 11: the owner of a tenant's
 * shard is its chain's main writer). A cached head lets `appendAudit` skip the head-lock statement and move the
 * head with a conditional update instead; the cache is only ever a guess: when another writer (an approval
 * decided through the API, a cancel, a flag change, a coordinator that owned the shard before) moved the head
 * meanwhile, the conditional update matches nothing, the transaction fails with STALE_HEAD and is applied again the
 * locking way. So a wrong entry costs one retry, never a fork.
 */
import type { AuditRow } from "../domain.js";
import type { ChainHead } from "./audit-hash.js";

/** Tenants kept at most; past that the oldest entries go (they are re-read under the head lock when needed). */
const DEFAULT_MAX_TENANTS = 100_000;
/**
 * A tenant whose cached head went stale is not cached again for this long: another writer is busy on its chain
 * (e.g. task starts through the API), and each stale head costs a whole batch applied twice, while locking the
 * head costs one statement.
 */
const DEFAULT_CONTENDED_MS = 5_000;

export interface AuditHeadCacheOptions {
  /** @defaultValue 100 000 */
  maxTenants?: number;
  /** @defaultValue 5 s */
  contendedMs?: number;
  clock?: () => number;
}

export class AuditHeadCache {
  private readonly heads = new Map<string, ChainHead>();
  /** Tenants found stale, and until when they are not cached. */
  private readonly contended = new Map<string, number>();
  private readonly maxTenants: number;
  private readonly contendedMs: number;
  private readonly clock: () => number;

  constructor(options: AuditHeadCacheOptions = {}) {
    this.maxTenants = options.maxTenants ?? DEFAULT_MAX_TENANTS;
    this.contendedMs = options.contendedMs ?? DEFAULT_CONTENDED_MS;
    this.clock = options.clock ?? Date.now;
  }

  get(orgId: string): ChainHead | undefined {
    return this.heads.get(orgId);
  }

  /** The heads `rows` leave behind (the last row per tenant); call only once they committed. */
  advance(rows: readonly AuditRow[]): void {
    const last = new Map<string, AuditRow>();
    for (const row of rows) {
      const seen = last.get(row.orgId);
      if (!seen || row.seq > seen.seq) last.set(row.orgId, row);
    }
    const now = this.clock();
    for (const [orgId, row] of last) {
      const until = this.contended.get(orgId);
      if (until !== undefined) {
        if (now < until) continue;
        this.contended.delete(orgId);
      }
      const cached = this.heads.get(orgId);
      // Commits of one tenant complete in seq order, but their continuations may run in either order.
      if (cached && cached.seq >= row.seq) continue;
      this.heads.delete(orgId);
      this.heads.set(orgId, { seq: row.seq, hash: row.hash });
    }
    while (this.heads.size > this.maxTenants) this.heads.delete(this.heads.keys().next().value!);
  }

  /** Drops the tenants' heads: they are read under the head lock next time. */
  forget(orgIds: Iterable<string>): void {
    for (const orgId of orgIds) this.heads.delete(orgId);
  }

  /** Drops heads another writer moved, and keeps them out of the cache for a while (see DEFAULT_CONTENDED_MS). */
  stale(orgIds: Iterable<string>): void {
    const until = this.clock() + this.contendedMs;
    for (const orgId of orgIds) {
      this.heads.delete(orgId);
      this.contended.set(orgId, until);
    }
    if (this.contended.size > this.maxTenants) {
      const now = this.clock();
      for (const [orgId, at] of this.contended) if (at <= now) this.contended.delete(orgId);
    }
  }

  get size(): number {
    return this.heads.size;
  }
}
