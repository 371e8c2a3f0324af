/**
 * Checking what an inbox envelope claims about tenancy before it is held: its task must exist and belong to the
 * tenant it names. (Applied envelopes get the same check from the engine, under the task lock.) Tasks never move
 * between tenants and are never deleted, so reading them without a lock is safe (TaskOwnerStore,
 * store/coordinator/coordinator-store.ts).
 */
import type { Envelope } from "../bus/codec.js";
import type { Queryable } from "../store/db.js";
import type { TaskOwnerStore } from "../store/coordinator/coordinator-store.js";
import { isUuid } from "../domain.js";

export interface FalseClaim {
  label: "unknown_task" | "tenant_mismatch";
  reason: string;
}

/** Envelope id → why its tenancy claim is false; envelopes whose claim holds are absent. */
export async function findForeignTaskClaims(store: TaskOwnerStore, db: Queryable, envelopes: readonly Envelope[]): Promise<Map<string, FalseClaim>> {
  const ids = [...new Set(envelopes.map((e) => e.taskId).filter(isUuid))];
  const owners = ids.length > 0 ? await store.owners(db, ids) : new Map<string, string>();
  const claims = new Map<string, FalseClaim>();
  for (const envelope of envelopes) {
    const owner = owners.get(envelope.taskId.toLowerCase());
    if (owner === undefined) claims.set(envelope.id, { label: "unknown_task", reason: `tenant ${envelope.orgId} has no task ${envelope.taskId} (unknown tenant or task): not held` });
    else if (owner !== envelope.orgId) claims.set(envelope.id, { label: "tenant_mismatch", reason: `task ${envelope.taskId} is not a task of tenant ${envelope.orgId}: not held` });
  }
  return claims;
}
