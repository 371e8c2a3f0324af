/**
 * What a delivery did, recorded through the ingest deliveries port (store/ingest/delivery-store.ts): one row per
 * delivery (`task_started`, `self_reply`, `ignored`), with the sha256 of its raw body. A task-starting row is written
 * in the task's own transaction (see TaskService.start `onCreated`), so a delivery is never recorded without its task
 * nor the reverse.
 *
 * GitHub and Gitea sign the body but not the delivery id: a captured delivery resent under a fresh id is the same
 * body, and is a duplicate of the first delivery recorded with it (within BODY_REPLAY_WINDOW_HOURS).
 */
import type { Pool, Queryable } from "../store/db.js";
import { withTransaction } from "../store/db.js";
import type { DeliveryRecord, DeliveryStore } from "../store/ingest/delivery-store.js";

export type { DeliveryCause, DeliveryRecord } from "../store/ingest/delivery-store.js";
import type { DeliveryCause } from "../store/ingest/delivery-store.js";

/** How long a GitHub / Gitea body is remembered as seen: a replay within it is a duplicate. */
export const BODY_REPLAY_WINDOW_HOURS = 24;

export interface RecordedDelivery {
  cause: DeliveryCause;
  taskId: string | null;
  duplicate: boolean;
}

/**
 * Records a delivery that starts no task; when the same delivery was recorded before (a redelivery) nothing changes
 * and the first record is returned with `duplicate: true`. With `byBody` (GitHub, Gitea) a delivery whose body was
 * recorded before within the window is a duplicate too; a transaction-scoped advisory lock on (endpoint, body)
 * makes two concurrent copies of one body record one row.
 */
export async function recordDelivery(store: DeliveryStore, pool: Pool, record: DeliveryRecord, options: { byBody?: boolean } = {}): Promise<RecordedDelivery> {
  if (!options.byBody) return insertOrFind(store, pool, record);
  return withTransaction(pool, async (client) => {
    await store.lockBody(client, `ingest-body:${record.endpointId}:${record.bodySha256}`);
    const seen = await store.findByBody(client, record.endpointId, record.bodySha256, BODY_REPLAY_WINDOW_HOURS);
    return seen ? { ...seen, duplicate: true } : insertOrFind(store, client, record);
  });
}

async function insertOrFind(store: DeliveryStore, db: Queryable, record: DeliveryRecord): Promise<RecordedDelivery> {
  if (await store.insert(db, record)) return { cause: record.cause, taskId: record.taskId, duplicate: false };
  const first = await store.find(db, record.endpointId, record.deliveryId);
  return { cause: first?.cause ?? record.cause, taskId: first?.taskId ?? null, duplicate: true };
}

/**
 * Records the task-starting deliveries of one batch in one statement, inside the transaction that created their
 * tasks. A delivery id recorded before is left as it was (its task is found by the task's idempotency key).
 */
export async function recordStartedDeliveries(store: DeliveryStore, db: Queryable, records: readonly DeliveryRecord[]): Promise<void> {
  if (records.length === 0) return;
  await store.insertMany(db, records);
}
