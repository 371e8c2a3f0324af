/**
 * Slack: `chat.postMessage` in the thread (`thread_ts`) with the bot token as Bearer. Slack answers HTTP 200 with
 * `ok: false` and an `error` for most failures; `ratelimited` is Slack's 429 in words, and a real 429 carries
 * `Retry-After`. The message's `ts` is its id. The permalink comes from `chat.getPermalink`, best effort: a post that
 * succeeded stays `sent` whatever that second call does. That call is made after the sender recorded the post: Slack
 * delivers the echo of our message at once, and it is recognised by the ts of a `sent` row or the learnt bot id.
 *
 * The answer's `message.bot_id` / `message.app_id` are our own identity in that workspace, learnt so that the echo of
 * our post (Slack delivers it as an event) can be recognised and start no task.
 */
import type { LearntIdentity, ProviderPost, ProviderResult, ReplyProvider } from "./provider.js";
import { joinUrl, missingId, postJson, stringOrNull } from "./provider.js";

export const slackProvider: ReplyProvider = {
  kind: "slack",
  maxTextChars: 40_000,
  async post(request: ProviderPost): Promise<ProviderResult> {
    const { address } = request;
    if (address.kind !== "slack_thread") throw new Error(`slack cannot answer a ${address.kind} address`);
    const auth = { authorization: `Bearer ${request.secret}` };
    const answer = await postJson(request, "slack", joinUrl(request.apiBaseUrl, "/chat.postMessage"), auth, {
      channel: address.channel,
      thread_ts: address.threadTs,
      text: request.text,
    });
    if (!answer.ok) return answer.outcome;
    const { data } = answer;
    if (data.ok !== true) {
      const error = typeof data.error === "string" ? data.error.slice(0, 100) : "unknown_error";
      if (error === "ratelimited") return { outcome: "retry", code: "provider_rate_limited", message: "slack answered ok:false: ratelimited" };
      return { outcome: "failed", code: "provider_rejected", message: `slack answered ok:false: ${error}` };
    }
    const ts = stringOrNull(data.ts);
    if (ts === null) return missingId("slack", "ts");
    const channel = stringOrNull(data.channel) ?? address.channel;
    // The permalink is looked up only after the sender recorded the post (see ProviderResult.lookupPermalink).
    return { outcome: "sent", providerId: ts, permalink: null, learnt: identityOf(data), lookupPermalink: () => permalink(request, channel, ts) };
  },
};

function identityOf(data: Record<string, unknown>): LearntIdentity {
  const message = typeof data.message === "object" && data.message !== null ? (data.message as Record<string, unknown>) : {};
  const botId = stringOrNull(message.bot_id) ?? stringOrNull(data.bot_id);
  const appId = stringOrNull(message.app_id) ?? stringOrNull(data.app_id);
  return { ...(botId ? { botId } : {}), ...(appId ? { appId } : {}) };
}

async function permalink(request: ProviderPost, channel: string, ts: string): Promise<string | null> {
  const url = `${joinUrl(request.apiBaseUrl, "/chat.getPermalink")}?channel=${encodeURIComponent(channel)}&message_ts=${encodeURIComponent(ts)}`;
  try {
    const response = await request.fetch(url, { headers: { authorization: `Bearer ${request.secret}` }, ...(request.signal ? { signal: request.signal } : {}) });
    if (response.status !== 200) return null;
    const data = (await response.json()) as Record<string, unknown>;
    return data.ok === true ? stringOrNull(data.permalink) : null;
  } catch {
    // Best effort: the post itself succeeded, and stays `sent` without a permalink.
    return null;
  }
}
