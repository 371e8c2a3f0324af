/**
 * Table `ingest_deliveries`: one row per delivery, keyed by (endpoint, provider delivery id), saying what it did
 * (`task_started`, `self_reply`, `ignored`), with the sha256 of its raw body. A task-starting row is written in the
 * task's own transaction (see TaskService.start `onCreated`), so a delivery is never recorded without its task nor
 * the reverse.
 *
 * GitHub and Gitea sign the body but not the delivery id: a captured delivery resent under a fresh id is the same
 * body, and is a duplicate of the first delivery recorded with it (within BODY_REPLAY_WINDOW_HOURS).
 */
import type { Pool, Queryable } from "../store/db.js";
import { withTransaction } from "../store/db.js";

export type DeliveryCause = "task_started" | "self_reply" | "ignored";

/** How long a GitHub / Gitea body is remembered as seen: a replay within it is a duplicate. */
export const BODY_REPLAY_WINDOW_HOURS = 24;

export interface DeliveryRecord {
  endpointId: string;
  deliveryId: string;
  orgId: string;
  event: string;
  cause: DeliveryCause;
  taskId: string | null;
  /** sha256 hex of the raw body as received. */
  bodySha256: string;
}

export interface RecordedDelivery {
  cause: DeliveryCause;
  taskId: string | null;
  duplicate: boolean;
}

/** The first delivery recorded for this endpoint with this body within the replay window, if any. */
export async function findDeliveryByBody(db: Queryable, endpointId: string, bodySha256: string): Promise<Omit<RecordedDelivery, "duplicate"> | undefined> {
  const { rows } = await db.query<{ cause: DeliveryCause; task_id: string | null }>(
    `SELECT cause, task_id FROM ingest_deliveries
      WHERE endpoint_id = $1 AND body_sha256 = $2 AND received_at > now() - make_interval(hours => $3)
      ORDER BY received_at LIMIT 1`,
    [endpointId, bodySha256, BODY_REPLAY_WINDOW_HOURS],
  );
  return rows[0] ? { cause: rows[0].cause, taskId: rows[0].task_id } : undefined;
}

/**
 * Records a delivery that starts no task; when the same delivery was recorded before (a redelivery) nothing changes
 * and the first record is returned with `duplicate: true`. With `byBody` (GitHub, Gitea) a delivery whose body was
 * recorded before within the window is a duplicate too; a transaction-scoped advisory lock on (endpoint, body)
 * makes two concurrent copies of one body record one row.
 */
export async function recordDelivery(pool: Pool, record: DeliveryRecord, options: { byBody?: boolean } = {}): Promise<RecordedDelivery> {
  if (!options.byBody) return insertOrFind(pool, record);
  return withTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`ingest-body:${record.endpointId}:${record.bodySha256}`]);
    const seen = await findDeliveryByBody(client, record.endpointId, record.bodySha256);
    return seen ? { ...seen, duplicate: true } : insertOrFind(client, record);
  });
}

async function insertOrFind(db: Queryable, record: DeliveryRecord): Promise<RecordedDelivery> {
  const inserted = await db.query(
    `INSERT INTO ingest_deliveries (endpoint_id, delivery_id, org_id, event, cause, task_id, body_sha256)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (endpoint_id, delivery_id) DO NOTHING`,
    [record.endpointId, record.deliveryId, record.orgId, record.event, record.cause, record.taskId, record.bodySha256],
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
