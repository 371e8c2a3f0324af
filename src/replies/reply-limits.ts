/** The reply bounds and deadlines a process takes from its configuration (config.origin). */
import type { Config } from "../config/index.js";
import { MAX_REPLY_TEXT_BYTES, type ReplyLimits } from "../core/reply-types.js";

export function replyLimitsOf(config: Pick<Config, "origin">): ReplyLimits {
  const o = config.origin;
  return {
    graceMs: o.replyGraceMs,
    taskCap: o.replyTaskCap,
    ratePerMinute: o.replyRatePerMinute,
    burst: o.replyBurst,
    cost: o.replyCost,
    maxTextBytes: MAX_REPLY_TEXT_BYTES,
  };
}

/**
 * How long a caller waits for a reply's outcome before answering `unknown` / `outcome_pending`: every dial the
 * sender may make, plus 30 s for the row to be claimed.
 */
export function replyDeadlineMs(config: Pick<Config, "origin">): number {
  return config.origin.replyTimeoutMs * config.origin.replyDialAttempts + 30_000;
}
