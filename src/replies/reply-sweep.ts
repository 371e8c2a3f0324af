/**
 * The sender's sweep: rows a sender left `dialing` past their lease (it died mid-request, so the provider may have
 * the message) become `unknown` (`interrupted`), never dialed again; rows pending past `maxPendingMs` become
 * `failed` (`expired`): a reply posted hours late answers a moved-on conversation.
 */
import type { Logger } from "../logger.js";
import { countOriginReply, type Metrics } from "../metrics/metrics.js";
import type { Pool } from "../store/db.js";
import type { ReplyDialStore } from "../store/replies/reply-store.js";

/** Resolves with how many rows it settled. */
export async function sweepReplies(store: Pick<ReplyDialStore, "expireStale" | "sweepInterrupted">, pool: Pool, metrics: Metrics | undefined, logger: Logger, maxPendingMs: number): Promise<number> {
  const swept = await store.sweepInterrupted(pool);
  for (const row of swept) {
    metrics?.originReplyDials.inc({ kind: row.kind, outcome: "unknown" });
    countOriginReply(metrics, "unknown", "interrupted");
    logger.warn({ replyId: row.id, orgId: row.orgId, taskId: row.taskId }, "origin reply interrupted mid-dial; marked unknown, not sent again");
  }
  const expired = await store.expireStale(pool, maxPendingMs);
  for (const row of expired) {
    countOriginReply(metrics, "failed", "expired");
    logger.warn({ replyId: row.id, orgId: row.orgId, taskId: row.taskId, maxPendingMs }, "origin reply pending too long; failed expired, not sent");
  }
  return swept.length + expired.length;
}
