/**
 * The tenancy ports (issue 27 §2): `tenants` (the owners of workflows, tasks and one audit chain each) and
 * `api_keys` (only a key's sha256 hash and a short prefix are stored, never the key). What is checked before a row
 * is written stays with the feature (tenancy/tenants.ts, tenancy/api-keys.ts), which takes these ports as its first
 * argument; the Postgres adapter is postgres-tenancy-store.ts beside this file.
 */
import type { Queryable } from "../db.js";

export interface TenantRecord {
  orgId: string;
  name: string;
  /** Cost units per UTC day; null when unbounded. */
  dailyBudget: number | null;
  createdAt: Date;
}

export interface TenantStore {
  /** Undefined when the org id is taken (nothing written). */
  insert(db: Queryable, tenant: { orgId: string; name: string; dailyBudget: number | null }): Promise<TenantRecord | undefined>;
  get(db: Queryable, orgId: string): Promise<TenantRecord | undefined>;
  /** Whether the tenant exists, reading no more of its row (the auth interceptor asks on every admin-key call). */
  exists(db: Queryable, orgId: string): Promise<boolean>;
  /** Every tenant, by org id. */
  list(db: Queryable): Promise<TenantRecord[]>;
  /** Undefined when there is no such tenant. */
  setBudget(db: Queryable, orgId: string, dailyBudget: number | null): Promise<TenantRecord | undefined>;
}

export type ApiKeyKind = "tenant" | "admin";

export interface ApiKeyRecord {
  id: string;
  kind: ApiKeyKind;
  /** null for admin keys. */
  orgId: string | null;
  name: string;
  /** The first characters of the key, e.g. `sy_Ab3dE9xQ`. */
  prefix: string;
  createdAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

export interface NewApiKeyRow {
  id: string;
  kind: ApiKeyKind;
  orgId: string | null;
  name: string;
  keyHash: string;
  keyPrefix: string;
}

export interface ApiKeyStore {
  /** Rejects with Postgres's own error (23503 when the tenant row is missing): the feature says what it means. */
  insert(db: Queryable, key: NewApiKeyRow): Promise<ApiKeyRecord>;
  /** Sets `revoked_at` unless it is set already; undefined for an unknown id. */
  revoke(db: Queryable, id: string): Promise<ApiKeyRecord | undefined>;
  /** The keys of `orgId` (every key when null), oldest first. */
  list(db: Queryable, orgId: string | null): Promise<ApiKeyRecord[]>;
  /**
   * The keys with these hashes, revoked or not, in one statement which also records the use of the live ones whose
   * `last_used_at` is older than `touchEverySeconds`.
   */
  findByHashes(db: Queryable, hashes: readonly string[], touchEverySeconds: number): Promise<Array<ApiKeyRecord & { keyHash: string }>>;
}
