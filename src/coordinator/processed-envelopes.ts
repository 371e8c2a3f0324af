/**
 * `processed_envelopes` remembers the id of every envelope the engine applied, so a redelivery (idle reclaim,
 * outbox relay, a replayed dead letter) is dropped inside the same transaction instead of applied twice. The ids
 * are kept for a retention window (SWITCHYARD_DEDUPE_RETENTION_MS, 7 days by default) and trimmed by age through
 * the `processed_envelopes_age` index, so the table stays bounded by rate × retention.
 */
import type { Queryable } from "../store/db.js";

/** Deletes the ids applied longer ago than `retentionMs`; resolves with how many went. */
export async function trimProcessedEnvelopes(db: Queryable, retentionMs: number): Promise<number> {
  const { rowCount } = await db.query("DELETE FROM processed_envelopes WHERE processed_at < now() - make_interval(secs => $1)", [retentionMs / 1000]);
  return rowCount ?? 0;
}
