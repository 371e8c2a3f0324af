/**
 * The ingest deliveries port (issue 27 §2): `ingest_deliveries`, one row per provider delivery, keyed by (endpoint,
 * provider delivery id), saying what it did, with the sha256 of its raw body. The ingest route, the task starter and
 * the seen-bodies check take it in their options; the Postgres adapter is postgres-delivery-store.ts.
 */
import type { Queryable } from "../db.js";

export type DeliveryCause = "task_started" | "self_reply" | "ignored";

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

/** What a recorded delivery did. */
export interface DeliveryOutcome {
  cause: DeliveryCause;
  taskId: string | null;
}

export interface DeliveryStore {
  /** Holds a transaction-scoped advisory lock on `key` until `tx` ends. */
  lockBody(tx: Queryable, key: string): Promise<void>;
  /** The first delivery recorded for this endpoint with this body within the last `windowHours`, if any. */
  findByBody(db: Queryable, endpointId: string, bodySha256: string, windowHours: number): Promise<DeliveryOutcome | undefined>;
  /** The same for many (endpoint, body) pairs in one statement; answers in the order asked. */
  findManyByBody(db: Queryable, items: ReadonlyArray<{ endpointId: string; bodySha256: string }>, windowHours: number): Promise<Array<DeliveryOutcome | undefined>>;
  /** Inserts the row unless the (endpoint, delivery id) was recorded before; answers whether it was inserted. */
  insert(db: Queryable, record: DeliveryRecord): Promise<boolean>;
  /** The delivery recorded under (endpoint, delivery id), if any. */
  find(db: Queryable, endpointId: string, deliveryId: string): Promise<DeliveryOutcome | undefined>;
  /** Inserts many rows in one statement; a delivery id recorded before is left as it was. */
  insertMany(db: Queryable, records: readonly DeliveryRecord[]): Promise<void>;
}
