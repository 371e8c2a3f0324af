/**
 * The Postgres adapter of tenant policies (store/policies/policy-store.ts): the next version's insert and the
 * latest version's reads, for the governor's policy cache and `switchyard policy set|get` (governance/policy-store.ts).
 */
import type { Queryable } from "../db.js";
import type { PolicyStore } from "./policy-store.js";

export function createPostgresPolicyStore(): PolicyStore {
  return { insertNext: insertNextPolicy, latest: latestPolicy, latestVersion: latestPolicyVersion };
}

// Two writers may compute the same next version: the loser's insert does nothing and returns no row.
export async function insertNextPolicy(db: Queryable, orgId: string, documentJson: string): Promise<number | undefined> {
  const result = await db.query<{ version: number }>(
    `INSERT INTO policies (org_id, version, document)
     SELECT $1, COALESCE(max(version), 0) + 1, $2::jsonb FROM policies WHERE org_id = $1
     ON CONFLICT (org_id, version) DO NOTHING
     RETURNING version`,
    [orgId, documentJson],
  );
  return result.rows[0]?.version;
}

export async function latestPolicy(db: Queryable, orgId: string): Promise<{ version: number; document: unknown } | undefined> {
  const result = await db.query<{ version: number; document: unknown }>(
    "SELECT version, document FROM policies WHERE org_id = $1 ORDER BY version DESC LIMIT 1",
    [orgId],
  );
  return result.rows[0];
}

export async function latestPolicyVersion(db: Queryable, orgId: string): Promise<number | null> {
  const result = await db.query<{ version: number }>("SELECT max(version) AS version FROM policies WHERE org_id = $1", [orgId]);
  return result.rows[0]?.version ?? null;
}
