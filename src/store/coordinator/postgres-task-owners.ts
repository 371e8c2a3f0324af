/**
 * Who owns a task (TaskOwnerStore, coordinator-store.ts), read without a lock: tasks never move between tenants
 * and are never deleted.
 */
import type { Queryable } from "../db.js";

/** Task id → its tenant, for those of `taskIds` (valid UUIDs) that exist. */
export async function loadTaskOwners(db: Queryable, taskIds: readonly string[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ id: string; org_id: string }>("SELECT id::text AS id, org_id FROM tasks WHERE id = ANY($1::uuid[])", [taskIds]);
  return new Map(rows.map((row) => [row.id, row.org_id]));
}
