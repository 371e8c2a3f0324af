/**
 * The engine's reply facts for one batch: reads them through the ReplyFactsSource (under the task locks the
 * batch holds) and lays over them what earlier events of the SAME batch decided but has not been written yet —
 * rows recorded (the task cap and the idempotency key must count them) and tokens taken (the bucket).
 */
import type { ReplyFactsSource } from "../store/engine/engine-store.js";
import type { BucketState, ReplyEventFacts } from "../core/reply-types.js";
import type { Queryable } from "../store/db.js";
import { replyActor } from "../core/decide-reply.js";
import type { CoordinatorEvent, Effect, TaskState } from "../core/model.js";

export class ReplyBatch {
  private readonly recorded = new Map<string, { count: number; keys: Set<string> }>();
  private readonly buckets = new Map<string, BucketState>();

  constructor(private readonly source: ReplyFactsSource) {}

  /** Facts for a `reply_request`, or for an `approval_decided` whose approval no step holds; else undefined. */
  async facts(db: Queryable, state: TaskState, event: CoordinatorEvent): Promise<ReplyEventFacts | undefined> {
    const task = state.task;
    if (event.type === "reply_request") {
      const actor = replyActor(event.sender);
      const read = await this.source.forRequest(db, {
        orgId: task.orgId,
        taskId: task.id,
        address: task.replyTo,
        idempotencyKey: event.idempotencyKey,
        text: event.text,
        actor,
      });
      const mine = this.recorded.get(task.id);
      return {
        ...read,
        recordedCount: read.recordedCount + (mine?.count ?? 0),
        duplicate: read.duplicate || (mine?.keys.has(event.idempotencyKey) ?? false),
        bucket: this.buckets.get(bucketKey(task.orgId, actor)) ?? read.bucket,
      };
    }
    if (event.type === "approval_decided" && ![...state.steps.values()].some((s) => s.approvalId === event.approvalId)) {
      return this.source.forApproval(db, task.orgId, event.approvalId);
    }
    return undefined;
  }

  /** Notes what a decision recorded, for the later events of the batch. */
  observe(effects: readonly Effect[]): void {
    for (const effect of effects) {
      if (effect.type === "record_reply" && effect.reply.state !== "refused") {
        const mine = this.recorded.get(effect.reply.taskId) ?? { count: 0, keys: new Set<string>() };
        mine.count++;
        mine.keys.add(effect.reply.idempotencyKey);
        this.recorded.set(effect.reply.taskId, mine);
      } else if (effect.type === "reply_bucket") {
        this.buckets.set(bucketKey(effect.orgId, effect.actor), { tokens: effect.tokens, updatedAtMs: effect.atMs });
      }
    }
  }
}

function bucketKey(orgId: string, actor: string): string {
  return `${orgId}\u0000${actor}`;
}
