/**
 * The inbox envelope of a task start through the owner (issue 11 §2): the gateway writes the task, its pending steps
 * and this envelope (in the outbox) in one transaction; the coordinator owning the tenant's shard applies the
 * `task_started` event it maps to (envelopes.ts), so the dispatch hop and its audit row are written on the owner's
 * chain, never in the gateway.
 *
 * The id is derived from the task id, and the event id is `start:<taskId>`, as on the inline path: a second
 * publication (relay sweep after a publish that did reach Redis) is a duplicate, and the two paths dedupe each other.
 */
import { COORDINATOR_ENDPOINT, EnvelopeKind, TASK_STARTED_CONTENT_TYPE, createEnvelope, type Envelope } from "../bus/codec.js";
import type { EnvelopeSigner } from "../bus/auth/bus-auth.js";
import type { Queryable } from "../store/db.js";
import { derivedIdSource } from "../coordinator/envelopes.js";
import { startEventId } from "../core/model.js";
import type { OutboxRow } from "../store/engine/engine-store.js";
import type { TaskStore } from "../store/tasks/task-store.js";
import { inboxOf } from "../bus/shards.js";

const encoder = new TextEncoder();
const PAYLOAD = encoder.encode(JSON.stringify({ type: "task_started" }));

/** The start envelope's id: the same for every publication of one task's start. */
export function startEnvelopeId(taskId: string): string {
  return derivedIdSource(startEventId(taskId))();
}

/** `traceparent`: the task's root trace context, when tracing is on (the owner's first hop continues it). */
export function createStartEnvelope(orgId: string, taskId: string, nowMs: number, traceparent?: string): Envelope {
  return createEnvelope({
    id: startEnvelopeId(taskId),
    orgId,
    taskId,
    kind: EnvelopeKind.CONTROL,
    destination: COORDINATOR_ENDPOINT,
    payload: { data: PAYLOAD, contentType: TASK_STARTED_CONTENT_TYPE },
    createdAtMs: BigInt(nowMs),
    ...(traceparent ? { trace: { traceparent, tracestate: "" } } : {}),
  });
}

/** How a gateway reaches a tenant's shard owner: its signer (the gateway identity) and the deployment's shard count. */
export interface StartOwner {
  signer: EnvelopeSigner;
  shardCount: number;
}

/** Writes the start envelopes of just-created tasks to the outbox (through `store`), in the starting transaction. */
export async function insertStartEnvelopes(
  store: Pick<TaskStore, "insertOutbox">,
  client: Queryable,
  orgId: string,
  created: ReadonlyArray<{ taskId: string; traceparent?: string }>,
  owner: StartOwner,
): Promise<OutboxRow[]> {
  const stream = inboxOf(orgId, owner.shardCount);
  const now = Date.now();
  return store.insertOutbox(
    client,
    created.map(({ taskId, traceparent }) => {
      const envelope = createStartEnvelope(orgId, taskId, now, traceparent);
      return { orgId, stream, envelopeId: envelope.id, bytes: owner.signer.sign(envelope) };
    }),
  );
}
