/**
 * "Was this GitHub / Gitea body delivered to this endpoint before?" for many concurrent deliveries in one query
 * (like EchoChecker), through the ingest deliveries port: a burst of deliveries costs one round trip, not one pool connection each. A read only: the
 * race between two copies of one body is settled where they are written (delivery-store.ts `recordDelivery`, and
 * the task's body-hash idempotency key).
 */
import type { Queryable } from "../store/db.js";
import type { DeliveryStore } from "../store/ingest/delivery-store.js";
import { MicroBatcher } from "../store/micro-batcher.js";
import { BODY_REPLAY_WINDOW_HOURS, type DeliveryCause } from "./delivery-store.js";

export type SeenDelivery = { cause: DeliveryCause; taskId: string | null };

export class SeenBodies {
  private readonly batcher: MicroBatcher<{ endpointId: string; bodySha256: string }, SeenDelivery | undefined>;

  constructor(
    private readonly store: Pick<DeliveryStore, "findManyByBody">,
    private readonly db: Queryable,
    options: { maxBatch?: number; maxInFlight?: number } = {},
  ) {
    this.batcher = new MicroBatcher({ run: (items) => this.findBatch(items), maxBatch: options.maxBatch ?? 200, maxInFlight: options.maxInFlight ?? 2 });
  }

  /** The first delivery recorded for this endpoint with this body within the replay window, if any. */
  find(endpointId: string, bodySha256: string): Promise<SeenDelivery | undefined> {
    return this.batcher.submit({ endpointId, bodySha256 });
  }

  private async findBatch(items: ReadonlyArray<{ endpointId: string; bodySha256: string }>): Promise<Array<SeenDelivery | undefined>> {
    return this.store.findManyByBody(this.db, items, BODY_REPLAY_WINDOW_HOURS);
  }
}
