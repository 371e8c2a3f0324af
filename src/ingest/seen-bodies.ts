/**
 * "Was this GitHub / Gitea body delivered to this endpoint before?" for many concurrent deliveries in one query
 * (like EchoChecker): a burst of deliveries costs one round trip, not one pool connection each. A read only: the
 * race between two copies of one body is settled where they are written (delivery-store.ts `recordDelivery`, and
 * the task's body-hash idempotency key).
 */
import type { Queryable } from "../store/db.js";
import { MicroBatcher } from "../store/micro-batcher.js";
import { BODY_REPLAY_WINDOW_HOURS, type DeliveryCause } from "./delivery-store.js";

export type SeenDelivery = { cause: DeliveryCause; taskId: string | null };

export class SeenBodies {
  private readonly batcher: MicroBatcher<{ endpointId: string; bodySha256: string }, SeenDelivery | undefined>;

  constructor(private readonly db: Queryable, options: { maxBatch?: number; maxInFlight?: number } = {}) {
    this.batcher = new MicroBatcher({ run: (items) => this.findBatch(items), maxBatch: options.maxBatch ?? 200, maxInFlight: options.maxInFlight ?? 2 });
  }

  /** The first delivery recorded for this endpoint with this body within the replay window, if any. */
  find(endpointId: string, bodySha256: string): Promise<SeenDelivery | undefined> {
    return this.batcher.submit({ endpointId, bodySha256 });
  }

  private async findBatch(items: ReadonlyArray<{ endpointId: string; bodySha256: string }>): Promise<Array<SeenDelivery | undefined>> {
    const { rows } = await this.db.query<{ i: number; cause: DeliveryCause; task_id: string | null }>(
      `SELECT p.i, d.cause, d.task_id
         FROM unnest($1::int[], $2::text[], $3::text[]) AS p(i, endpoint_id, body_sha256)
         CROSS JOIN LATERAL (
           SELECT cause, task_id FROM ingest_deliveries
            WHERE endpoint_id = p.endpoint_id AND body_sha256 = p.body_sha256 AND received_at > now() - make_interval(hours => $4)
            ORDER BY received_at LIMIT 1) AS d`,
      [items.map((_, i) => i), items.map((x) => x.endpointId), items.map((x) => x.bodySha256), BODY_REPLAY_WINDOW_HOURS],
    );
    const found = new Map(rows.map((r) => [r.i, { cause: r.cause, taskId: r.task_id }]));
    return items.map((_, i) => found.get(i));
  }
}
