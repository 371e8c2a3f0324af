/**
 * Exactly-once application of inbound envelopes (ProcessedEnvelopeStore): an envelope id is recorded in
 * `processed_envelopes` in the transaction that applies it, and a second arrival is dropped. Refused envelopes are
 * forgotten again. The ids are kept for a retention window (SWITCHYARD_DEDUPE_RETENTION_MS, 7 days by default) and
 * trimmed by age by the coordinator's sweeps through the `processed_envelopes_age` index, so the table stays
 * bounded by rate × retention.
 */
import type { Queryable } from "../db.js";
import type { EngineInput, RefusedInput } from "./engine-store.js";
import type { CoordinatorEvent } from "../../core/model.js";

/** A refused envelope was not processed: its id must not shadow the genuine envelope that may carry it. */
export async function forgetRefused(client: Queryable, refused: readonly RefusedInput[], applied: ReadonlySet<string>): Promise<void> {
  const ids = refused.filter((r) => r.input.dedupe && !applied.has(r.input.event.eventId)).map((r) => r.input.event.eventId);
  if (ids.length > 0) await client.query("DELETE FROM processed_envelopes WHERE envelope_id = ANY($1::text[])", [ids]);
}

export async function dedupe(client: Queryable, inputs: readonly EngineInput[]): Promise<EngineInput[]> {
  const keyed = inputs.filter((i) => i.dedupe);
  if (keyed.length === 0) return [...inputs];
  const { rows } = await client.query<{ envelope_id: string }>(
    `INSERT INTO processed_envelopes (envelope_id, org_id)
     SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING RETURNING envelope_id`,
    [keyed.map((i) => i.event.eventId), keyed.map((i) => i.orgId)],
  );
  const inserted = new Set(rows.map((r) => r.envelope_id));
  const seen = new Set<string>();
  return inputs.filter((i) => {
    if (!i.dedupe) return true;
    // A duplicate within one batch is caught here; across batches by the unique key.
    // Per sender: a forged envelope reusing a genuine one's id in the same batch must not shadow it (the forgery
    // is refused, the genuine one applies).
    const key = `${i.event.eventId}\u0000${senderKey(i.event)}`;
    if (!inserted.has(i.event.eventId) || seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function senderKey(event: CoordinatorEvent): string {
  if (!("sender" in event)) return "";
  const sender = event.sender;
  switch (sender.kind) {
    case "queue":
      return sender.endpoint;
    case "gateway":
      return `gateway:${sender.agent}`;
    case "api":
      return `api:${sender.actor}`;
    case "coordinator":
      return "coordinator";
  }
}

/** Deletes the ids applied longer ago than `retentionMs`; resolves with how many went. */
export async function trimProcessedEnvelopes(db: Queryable, retentionMs: number): Promise<number> {
  const { rowCount } = await db.query("DELETE FROM processed_envelopes WHERE processed_at < now() - make_interval(secs => $1)", [retentionMs / 1000]);
  return rowCount ?? 0;
}
