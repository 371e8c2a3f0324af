/**
 * The `ctx` a handler runs with (types.ts, HandlerContext): its signal and logger, heartbeats, usage reports, the
 * delegation markers, origin replies and delegate results. None of its functions uses `this`, so a handler may
 * destructure it or pass them on.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";
import { defaultReplyKey, MAX_REPLY_KEY_CHARS } from "../replies/reply-key.js";
import type { DelegationMarkers } from "./delegation-markers.js";
import { carriedResultOf, heartbeatEnvelope, replyEnvelope, type TurnUsage } from "./envelopes.js";
import { addUsage } from "./handler-usage.js";
import type { TurnState } from "./turn-state.js";
import type { HandlerContext, ReplyOptions, UsageReport, Work } from "./types.js";

/** `usage` is the turn's own, filled by `ctx.usage` and sent with its outcome. */
export function createHandlerContext(turn: TurnState, work: Work, usage: TurnUsage, markers: DelegationMarkers): HandlerContext {
  const { deps, envelope, controller, logger } = turn;
  return {
    signal: controller.signal,
    logger,
    async heartbeat() {
      if (controller.signal.aborted) throw new SwitchyardError(ErrorCode.Cancelled, "the turn was abandoned");
      if (turn.settled) return;
      await turn.touch();
      await turn.publish(heartbeatEnvelope(envelope, deps.source, deps.now()));
      deps.observer?.heartbeatSent();
    },
    usage(report: UsageReport) {
      addUsage(usage, report);
    },
    delegate: markers.delegate,
    delegateAll: markers.delegateAll,
    awaitMore: markers.awaitMore,
    async reply(text: string, options: ReplyOptions = {}) {
      if (controller.signal.aborted) throw new SwitchyardError(ErrorCode.Cancelled, "the turn was abandoned");
      if (!deps.replies) throw new SwitchyardError(ErrorCode.FailedPrecondition, "this harness cannot learn reply outcomes; pass `replies` to post origin replies");
      if (typeof text !== "string") throw invalid("reply text must be a string");
      const key = options.idempotencyKey ?? defaultReplyKey(work.taskId, text);
      if (typeof key !== "string" || key === "" || key.length > MAX_REPLY_KEY_CHARS) throw invalid(`reply idempotencyKey must be a string of 1 to ${MAX_REPLY_KEY_CHARS} characters`);
      const request = replyEnvelope(envelope, deps.source, text, key, deps.now());
      await turn.publish(request);
      const outcome = await deps.replies.waitForOutcome({ orgId: work.orgId, taskId: work.taskId, requestId: request.id, idempotencyKey: key }, { signal: controller.signal, deadlineMs: deps.replies.deadlineMs });
      logger.info({ replyId: outcome.replyId, status: outcome.status, code: outcome.code }, "origin reply");
      return outcome;
    },
    async readResult(ref: string) {
      // The REPLY that woke this turn carries its delegate's output when it fit: no store is asked. A copy, so a
      // handler that edits what it read reads the original again.
      const carried = ref === work.resume?.reply.resultRef ? carriedResultOf(envelope) : undefined;
      if (carried) return structuredClone(carried.value);
      if (!deps.resultReader) {
        throw new SwitchyardError(
          ErrorCode.FailedPrecondition,
          `the result ${ref} did not travel in this turn's REPLY (another reply's, or over the payload cap) and this harness has no result reader; keep what a later turn needs in the checkpoint state`,
          { details: { ref } },
        );
      }
      return deps.resultReader.read(work.orgId, ref);
    },
  };
}

function invalid(message: string, details: Record<string, unknown> = {}): SwitchyardError {
  return new SwitchyardError(ErrorCode.InvalidArgument, message, { details });
}
