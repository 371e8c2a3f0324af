/**
 * Workflow submission under a tenant's row-level-security scope, for API traffic: a tenant request never writes
 * as the table owner.
 */
import type { WorkflowDefinition } from "../domain.js";
import type { Pool } from "../store/db.js";
import { withTenantTransaction } from "../store/tenant-scope.js";
import { submitWorkflowIn, type SubmittedWorkflow } from "../store/workflow-store.js";

export async function submitWorkflowAsTenant(pool: Pool, orgId: string, def: WorkflowDefinition): Promise<SubmittedWorkflow> {
  return withTenantTransaction(pool, orgId, (client) => submitWorkflowIn(client, orgId, def));
}
