/**
 * The storage port of tenant policies (`policies`: one row per version, versions 1, 2, 3 … per tenant, never
 * updated). Validation and compiling stay with the governor (governance/policy-store.ts); the Postgres adapter is
 * postgres-policy-store.ts.
 */
import type { Queryable } from "../db.js";

export interface PolicyStore {
  /**
   * Stores `documentJson` as the tenant's next version and returns it; undefined when another writer took that
   * number first (nothing stored, no error, so a caller's transaction survives).
   */
  insertNext(db: Queryable, orgId: string, documentJson: string): Promise<number | undefined>;
  /** The tenant's latest version and its stored document, or undefined when it has none. */
  latest(db: Queryable, orgId: string): Promise<{ version: number; document: unknown } | undefined>;
  /** The tenant's latest version number, or null when it has none. */
  latestVersion(db: Queryable, orgId: string): Promise<number | null>;
}
