/** The Postgres adapter of the ingest deliveries port (delivery-store.ts). */
import type { Queryable } from "../db.js";
import type { DeliveryCause, DeliveryOutcome, DeliveryRecord, DeliveryStore } from "./delivery-store.js";

export async function lockDeliveryBody(tx: Queryable, key: string): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [key]);
}

export async function findDeliveryByBody(db: Queryable, endpointId: string, bodySha256: string, windowHours: number): Promise<DeliveryOutcome | undefined> {
  const { rows } = await db.query<{ cause: DeliveryCause; task_id: string | null }>(
    `SELECT cause, task_id FROM ingest_deliveries
      WHERE endpoint_id = $1 AND body_sha256 = $2 AND received_at > now() - make_interval(hours => $3)
      ORDER BY received_at LIMIT 1`,
    [endpointId, bodySha256, windowHours],
  );
  return rows[0] ? { cause: rows[0].cause, taskId: rows[0].task_id } : undefined;
}

export async function findDeliveriesByBody(db: Queryable, items: ReadonlyArray<{ endpointId: string; bodySha256: string }>, windowHours: number): Promise<Array<DeliveryOutcome | undefined>> {
  const { rows } = await db.query<{ i: number; cause: DeliveryCause; task_id: string | null }>(
    `SELECT p.i, d.cause, d.task_id
       FROM unnest($1::int[], $2::text[], $3::text[]) AS p(i, endpoint_id, body_sha256)
       CROSS JOIN LATERAL (
         SELECT cause, task_id FROM ingest_deliveries
          WHERE endpoint_id = p.endpoint_id AND body_sha256 = p.body_sha256 AND received_at > now() - make_interval(hours => $4)
          ORDER BY received_at LIMIT 1) AS d`,
    [items.map((_, i) => i), items.map((x) => x.endpointId), items.map((x) => x.bodySha256), windowHours],
  );
  const found = new Map(rows.map((r) => [r.i, { cause: r.cause, taskId: r.task_id }]));
  return items.map((_, i) => found.get(i));
}

export async function insertDelivery(db: Queryable, record: DeliveryRecord): Promise<boolean> {
  const inserted = await db.query(
    `INSERT INTO ingest_deliveries (endpoint_id, delivery_id, org_id, event, cause, task_id, body_sha256)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (endpoint_id, delivery_id) DO NOTHING`,
    [record.endpointId, record.deliveryId, record.orgId, record.event, record.cause, record.taskId, record.bodySha256],
  );
  return inserted.rowCount === 1;
}

export async function findDelivery(db: Queryable, endpointId: string, deliveryId: string): Promise<DeliveryOutcome | undefined> {
  const { rows } = await db.query<{ cause: DeliveryCause; task_id: string | null }>(
    "SELECT cause, task_id FROM ingest_deliveries WHERE endpoint_id = $1 AND delivery_id = $2",
    [endpointId, deliveryId],
  );
  return rows[0] ? { cause: rows[0].cause, taskId: rows[0].task_id } : undefined;
}

export async function insertDeliveries(db: Queryable, records: readonly DeliveryRecord[]): Promise<void> {
  await db.query(
    `INSERT INTO ingest_deliveries (endpoint_id, delivery_id, org_id, event, cause, task_id, body_sha256)
     SELECT x.endpoint_id, x.delivery_id, x.org_id, x.event, x.cause, x.task_id, x.body_sha256
       FROM json_to_recordset($1::json) AS x(endpoint_id text, delivery_id text, org_id text, event text, cause text, task_id uuid, body_sha256 text)
     ON CONFLICT (endpoint_id, delivery_id) DO NOTHING`,
    [
      JSON.stringify(
        records.map((r) => ({ endpoint_id: r.endpointId, delivery_id: r.deliveryId, org_id: r.orgId, event: r.event, cause: r.cause, task_id: r.taskId, body_sha256: r.bodySha256 })),
      ),
    ],
  );
}

export function createPostgresDeliveryStore(): DeliveryStore {
  return {
    lockBody: lockDeliveryBody,
    findByBody: findDeliveryByBody,
    findManyByBody: findDeliveriesByBody,
    insert: insertDelivery,
    find: findDelivery,
    insertMany: insertDeliveries,
  };
}
