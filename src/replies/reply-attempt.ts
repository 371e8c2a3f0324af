/**
 * One dial of one claimed row, up to the outcome its row is to get: prepared (reply-dial.ts; a refusal or a
 * not-ready connection sends nothing), sent to the provider, and what the answer says about the connection recorded
 * on it before the row settles (a Slack bot's identity, a 429's hold on the connection).
 */
import type { Logger } from "../logger.js";
import { dialProvider, prepareDial, type PreparedDial, type ReplyEgressOptions } from "./reply-dial.js";
import { retryDelay, retryOrFail, toFinish, type RetryPolicy } from "./reply-retry.js";
import type { ClaimedReply, ReplyFinish } from "../store/replies/reply-store.js";
import type { ReplySenderOptions } from "./reply-sender.js";

/** Built once per sender. */
export interface DialContext {
  options: ReplySenderOptions;
  egress: ReplyEgressOptions;
  clock: () => number;
  retry: RetryPolicy;
}

/** A dial's result, for recording (reply-recording.ts). */
export interface DialedReply {
  /** The connection's kind; `none` when the dial got no connection. */
  kind: string;
  /** The opened credential, to redact from the row's message; empty when none was opened. */
  secret: string;
  finish: ReplyFinish;
  /** A sent reply's permalink, looked up once the row says `sent`. */
  permalinkLater: (() => Promise<string | null>) | undefined;
}

export async function dialReply(context: DialContext, reply: ClaimedReply, log: Logger): Promise<DialedReply> {
  const { options, clock, retry } = context;
  let kind = "none";
  let secret = "";
  let finish: ReplyFinish;
  let permalinkLater: (() => Promise<string | null>) | undefined;
  let prepared: PreparedDial;
  try {
    prepared = await prepareDial(options, reply);
  } catch (error) {
    // Nothing was written yet (a database blip, a bug before the request): dialed again like a failed connection.
    prepared = { notReady: { code: "sender_error", message: `the dial could not be prepared: ${error instanceof Error ? error.message : String(error)}` } };
  }
  if ("refuse" in prepared) finish = { state: "failed", ...prepared.refuse };
  else if ("notReady" in prepared) finish = retryOrFail(retry, reply.dialAttempts, prepared.notReady.code, prepared.notReady.message);
  else {
    const { connection } = prepared;
    kind = connection.kind;
    secret = prepared.secret;
    try {
      const started = clock();
      const result = await dialProvider({ ...options, egress: context.egress, clock, maxRetryAfterMs: retry.maxRetryAfterMs }, connection, prepared.address, prepared.secret, reply.text);
      options.metrics?.originReplyDialSeconds.observe({ kind }, Math.max(0, clock() - started) / 1000);
      if (result.outcome === "sent") {
        // Learnt before the row says `sent`: the echo Slack delivers at once is recognised by either.
        if (result.learnt && (result.learnt.botId || result.learnt.appId)) {
          await options.store.learnIdentity(options.pool, connection.id, result.learnt.botId ?? null, result.learnt.appId ?? null).catch((error: unknown) =>
            log.warn({ err: error }, "could not record the Slack bot identity"),
          );
        }
        permalinkLater = result.lookupPermalink;
      }
      if (result.outcome === "retry" && result.code === "provider_rate_limited") {
        // Before the row is put back: the connection's other rows must not be claimed in between.
        await options.store.limitConnection(options.pool, connection.id, retryDelay(retry, reply.dialAttempts, result.retryAfterMs)).catch((error: unknown) =>
          log.warn({ err: error }, "could not record the connection's rate limit"),
        );
      }
      finish = toFinish(retry, result, reply.dialAttempts);
    } catch (error) {
      // Our own failure (database, a bug) once the request may have been written: never again.
      finish = { state: "unknown", code: "sender_error", message: error instanceof Error ? error.message : String(error) };
    }
  }
  return { kind, secret, finish, permalinkLater };
}
