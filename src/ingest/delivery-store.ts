/**
 * Table `ingest_deliveries`: one row per delivery, keyed by (endpoint, provider delivery id), saying what it did
 * (`task_started`, `self_reply`, `ignored`). A task-starting row is written in the task's own transaction (see
 * TaskService.start `onCreated`), so a delivery is never recorded without its task nor the reverse.
 */
import type { Queryable } from "../store/db.js";

export type DeliveryCause = "task_started" | "self_reply" | "ignored";

export interface DeliveryRecord {
  endpointId: string;
  deliveryId: string;
  orgId: string;
  event: string;
  cause: DeliveryCause;
  taskId: string | null;
}

/**
 * Records a delivery; when the same delivery was recorded before (a redelivery) nothing changes and the first
 * record is returned with `duplicate: true`.
 */
export async function recordDelivery(db: Queryable, record: DeliveryRecord): Promise<{ cause: DeliveryCause; taskId: string | null; duplicate: boolean }> {
  const inserted = await db.query(
    `INSERT INTO ingest_deliveries (endpoint_id, delivery_id, org_id, event, cause, task_id)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (endpoint_id, delivery_id) DO NOTHING`,
    [record.endpointId, record.deliveryId, record.orgId, record.event, record.cause, record.taskId],
  );
  if (inserted.rowCount === 1) return { cause: record.cause, taskId: record.taskId, duplicate: false };
  const { rows } = await db.query<{ cause: DeliveryCause; task_id: string | null }>(
    "SELECT cause, task_id FROM ingest_deliveries WHERE endpoint_id = $1 AND delivery_id = $2",
    [record.endpointId, record.deliveryId],
  );
  return { cause: rows[0]?.cause ?? record.cause, taskId: rows[0]?.task_id ?? null, duplicate: true };
}

/**
 * Records the task-starting deliveries of one batch in one statement, inside the transaction that created their
 * tasks. A delivery id recorded before is left as it was (its task is found by the task's idempotency key).
 */
export async function recordStartedDeliveries(db: Queryable, records: readonly DeliveryRecord[]): Promise<void> {
  if (records.length === 0) return;
  await db.query(
    `INSERT INTO ingest_deliveries (endpoint_id, delivery_id, org_id, event, cause, task_id)
     SELECT x.endpoint_id, x.delivery_id, x.org_id, x.event, x.cause, x.task_id
       FROM json_to_recordset($1::json) AS x(endpoint_id text, delivery_id text, org_id text, event text, cause text, task_id uuid)
     ON CONFLICT (endpoint_id, delivery_id) DO NOTHING`,
    [JSON.stringify(records.map((r) => ({ endpoint_id: r.endpointId, delivery_id: r.deliveryId, org_id: r.orgId, event: r.event, cause: r.cause, task_id: r.taskId })))],
  );
}
