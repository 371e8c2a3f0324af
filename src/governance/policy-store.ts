/**
 * Tenant policies (`policies`: one row per version, versions 1, 2, 3 … per tenant, never updated), validated and
 * compiled here and stored through the PolicyStore port (store/policies/), and a small TTL cache so running
 * coordinators pick up a new version within `ttlMs` without a restart.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { PolicyStore } from "../store/policies/policy-store.js";
import { BUILTIN_DEFAULT_POLICY } from "./default-policy.js";
import { compilePolicy, type CompiledPolicy } from "./policy.js";

const PUT_ATTEMPTS = 100;

/**
 * Validates the document (text or object) and stores its normalized form as the tenant's next version.
 * Throws INVALID_POLICY (nothing stored) when it does not validate.
 */
export async function putPolicy(store: Pick<PolicyStore, "insertNext">, db: Queryable, orgId: string, document: unknown): Promise<{ version: number }> {
  if (typeof orgId !== "string" || orgId === "") {
    throw new SwitchyardError(ErrorCode.InvalidArgument, "orgId must be a non-empty string", { details: { path: "orgId" } });
  }
  const compiled = compilePolicy(document);
  const json = JSON.stringify(compiled.document);
  // Two writers may compute the same next version: the loser's insert does nothing (no error, so a caller's
  // transaction survives) and it tries the next number. Each round lets at least one writer through.
  for (let attempt = 1; attempt <= PUT_ATTEMPTS; attempt++) {
    const version = await store.insertNext(db, orgId, json);
    if (version !== undefined) return { version };
  }
  throw new SwitchyardError(ErrorCode.Unavailable, `could not store a policy version for ${orgId}: too many concurrent writers`);
}

export interface StoredPolicy {
  version: number;
  compiled: CompiledPolicy;
}

/** The tenant's latest policy, or null when it has none (the governor then uses BUILTIN_DEFAULT_POLICY). */
export async function getPolicy(store: Pick<PolicyStore, "latest">, db: Queryable, orgId: string): Promise<StoredPolicy | null> {
  const row = await store.latest(db, orgId);
  // Stored already: it was accepted under the limits of its day and must keep loading; the run-time budget bounds it.
  return row ? { version: row.version, compiled: compilePolicy(row.document, { enforceStoreLimits: false }) } : null;
}

export interface PolicyCacheOptions {
  pool: Queryable;
  /** Where the versions are read (runtime.stores.policies). */
  store: Pick<PolicyStore, "latest" | "latestVersion">;
  /** How long a loaded policy is served before the next read; default 1000 ms. */
  ttlMs?: number;
  /** Clock for the TTL (tests); default Date.now. */
  now?: () => number;
}

interface CacheEntry {
  version: number | null;
  policy: CompiledPolicy;
  loadedAt: number;
}

/**
 * Per-tenant compiled policies, re-read from Postgres at most every `ttlMs`. A re-read that finds the same
 * version keeps the compiled policy (no recompilation). Concurrent `get`s for one tenant share one read.
 * A failed read is thrown to the caller; the next `get` tries again.
 */
export class PolicyCache {
  private readonly pool: Queryable;
  private readonly store: Pick<PolicyStore, "latest" | "latestVersion">;
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, CacheEntry>();
  private readonly loading = new Map<string, Promise<CompiledPolicy>>();

  constructor(options: PolicyCacheOptions) {
    this.pool = options.pool;
    this.store = options.store;
    this.ttlMs = options.ttlMs ?? 1000;
    this.now = options.now ?? Date.now;
  }

  /**
   * `db` lets a caller inside a transaction load through its own client: borrowing a second pooled connection
   * while holding one deadlocks once every connection is held by such a caller.
   */
  async get(orgId: string, db: Queryable = this.pool): Promise<CompiledPolicy> {
    const entry = this.entries.get(orgId);
    if (entry && this.now() - entry.loadedAt < this.ttlMs) return entry.policy;
    const inFlight = this.loading.get(orgId);
    if (inFlight) return inFlight;
    const load = this.load(orgId, entry, db).finally(() => this.loading.delete(orgId));
    this.loading.set(orgId, load);
    return load;
  }

  /** Forgets one tenant (or all), so the next `get` reads at once — e.g. right after this process put a policy. */
  invalidate(orgId?: string): void {
    if (orgId === undefined) this.entries.clear();
    else this.entries.delete(orgId);
  }

  private async load(orgId: string, previous: CacheEntry | undefined, db: Queryable): Promise<CompiledPolicy> {
    let version = await this.store.latestVersion(db, orgId);
    let policy = previous?.policy ?? BUILTIN_DEFAULT_POLICY;
    if (version === null) policy = BUILTIN_DEFAULT_POLICY;
    else if (previous?.version !== version) {
      const stored = await getPolicy(this.store, db, orgId);
      version = stored?.version ?? null;
      policy = stored?.compiled ?? BUILTIN_DEFAULT_POLICY;
    }
    this.entries.set(orgId, { version, policy, loadedAt: this.now() });
    return policy;
  }
}
