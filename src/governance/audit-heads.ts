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

export class AuditHeadCache {
  private readonly heads = new Map<string, ChainHead>();

  constructor(private readonly maxTenants = DEFAULT_MAX_TENANTS) {}

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
    for (const [orgId, row] of last) {
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

  get size(): number {
    return this.heads.size;
  }
}
