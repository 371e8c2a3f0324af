/**
 * Recording a dial's outcome: on its row (guarded by `state = 'dialing'`, so a row the sweep took is left alone),
 * the permalink after a `sent`, the metrics, and one log line. The credential is redacted from any message first.
 */
import type { Logger } from "../logger.js";
import { countOriginReply } from "../metrics/metrics.js";
import { redact } from "./dial-outcome.js";
import type { DialedReply } from "./reply-attempt.js";
import type { ClaimedReply } from "../store/replies/reply-store.js";
import type { ReplySenderOptions } from "./reply-sender.js";

export async function recordDial(options: ReplySenderOptions, reply: ClaimedReply, dialed: DialedReply, log: Logger): Promise<void> {
  const { kind, permalinkLater } = dialed;
  let finish = dialed.finish;
  if (finish.state !== "sent") finish = { ...finish, message: redact(finish.message, dialed.secret) };
  const written = await options.store.finish(options.pool, reply.id, finish, permalinkLater !== undefined).catch((error: unknown) => {
    log.error({ err: error }, "could not record a reply's outcome; the sweep will mark it unknown after its lease");
    return false;
  });
  if (written && permalinkLater) {
    const link = await permalinkLater();
    await options.store.completeSent(options.pool, reply.id, link).catch((error: unknown) => log.warn({ err: error }, "could not record a reply's permalink"));
  }
  options.metrics?.originReplyDials.inc({ kind, outcome: finish.state === "pending" ? "retry" : finish.state });
  // Counted once, by whoever settles the row: an unwritten outcome is the sweep's (`interrupted`).
  if (written && finish.state !== "pending") countOriginReply(options.metrics, finish.state, finish.state === "sent" ? "" : finish.code);
  const fields = {
    state: finish.state,
    dialAttempts: reply.dialAttempts,
    ...(finish.state === "sent" ? { providerId: finish.providerId } : { code: finish.code, message: finish.message }),
    ...(finish.state === "pending" ? { retryInMs: finish.delayMs } : {}),
    ...(written ? {} : { recorded: false }),
  };
  if (finish.state === "sent" || finish.state === "pending") log.info(fields, "origin reply dialed");
  else log.warn(fields, "origin reply not sent");
}
