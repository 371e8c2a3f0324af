/**
 * Workflow submission under a tenant's row-level-security scope, for API traffic.
 *
 * `submitWorkflow` in src/store/workflow-store.ts opens its own unscoped transaction; this is the same operation
 * inside `withTenantTransaction`, so a tenant request never writes as the table owner.
 * TODO(api): once workflow-store exports a `submitWorkflowIn(client, orgId, def)`, call it from here and drop the
 * copy of its body below.
 */
import type { WorkflowDefinition } from "../domain.js";
import type { Pool } from "../store/db.js";
import { withTenantTransaction } from "../store/tenant-scope.js";
import { formatWorkflowRef, type SubmittedWorkflow } from "../store/workflow-store.js";
import { canonicalDefinition, definitionDigest, parseWorkflowDefinition, workflowToSource } from "../workflow/definition.js";

// Must equal SUBMIT_LOCK_NAMESPACE in src/store/workflow-store.ts: CLI and API submitters of one name queue on
// the same advisory lock, so "max + 1" never hands one version out twice.
const SUBMIT_LOCK_NAMESPACE = 0x5759_4b46;

export async function submitWorkflowAsTenant(pool: Pool, orgId: string, def: WorkflowDefinition): Promise<SubmittedWorkflow> {
  const definition = canonicalDefinition(parseWorkflowDefinition(workflowToSource(def)));
  const digest = definitionDigest(definition);
  const { name } = definition;
  return withTenantTransaction(pool, orgId, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2 || '/' || $3))", [SUBMIT_LOCK_NAMESPACE, orgId, name]);
    const existing = await client.query<{ version: number }>("SELECT version FROM workflows WHERE org_id = $1 AND name = $2 AND digest = $3", [orgId, name, digest]);
    if (existing.rows[0]) {
      const version = existing.rows[0].version;
      return { name, version, ref: formatWorkflowRef(name, version), digest, created: false };
    }
    const inserted = await client.query<{ version: number }>(
      `INSERT INTO workflows (org_id, name, version, definition, digest)
       SELECT $1, $2, COALESCE(max(version), 0) + 1, $3, $4 FROM workflows WHERE org_id = $1 AND name = $2
       RETURNING version`,
      [orgId, name, JSON.stringify(definition), digest],
    );
    const version = inserted.rows[0]!.version;
    return { name, version, ref: formatWorkflowRef(name, version), digest, created: true };
  });
}
